import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Memory tests (the decision export) force a full GC before each heap sample.
    execArgv: ['--expose-gc'],
  },
});
