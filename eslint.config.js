// ESLint (flat config) with typescript-eslint's recommended rules, over the
// TypeScript and JavaScript sources and tests. `npm test` runs it
// (test/architecture/lint.test.ts). Formatting is Prettier's (.prettierrc.json).
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'node_modules/',
      'coverage/',
      'test/fixtures/',
      'clients/python/',
      'patches/',
      '.ci/',
      '.authz/',
      'clients/typescript/wire.ts' /* generated: npm run gen:types */,
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: { ...globals.node },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
      // `cond ? a() : b()` and `ok && done()` as statements are the codebase's idiom for one-line branches.
      '@typescript-eslint/no-unused-expressions': ['error', { allowShortCircuit: true, allowTernary: true }],
      // A variable read by a callback set up before its one assignment (a child process, a timer) stays `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // Input validation and the fuzzers match control characters (\x00-\x1f) on purpose.
      'no-control-regex': 'off',
      // postgres.js's own type parameter is `{}` (Sql<{}>), and empty interfaces are declared extension points.
      '@typescript-eslint/no-empty-object-type': 'off',
      // Outside test/, parsed JSON is still read as Record<string, any> in a few places (the CLI's
      // callService, the benches); typing them is a change of its own, not a lint fix.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    // Tests read parsed answers as JsonObject (test/helpers/json.ts, the one justified `any`) or a wire type.
    files: ['test/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'error' },
  },
  {
    // The dashboard's browser modules (plain JavaScript with JSDoc types).
    files: ['runtime/dashboard/public/**/*.js'],
    languageOptions: { globals: { ...globals.browser } },
  },
);
