/** The error of `upstream_auth:` when no token can be obtained for the upstream. */

/** A token could not be obtained (the message says why). */
export class UpstreamAuthError extends Error {
  readonly code = 'mcp_proxy.upstream_auth_failed';
  constructor(message: string) {
    super(message);
    this.name = 'UpstreamAuthError';
  }
}
