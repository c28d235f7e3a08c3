-- Ed25519 keys that sign permit tokens. One signs at a time (retired_at null);
-- a retired key stays published in the JWKS until expires_at, when every token
-- it signed has expired.
create table signing_keys (
  kid          text primary key,
  public_jwk   jsonb not null,
  -- PKCS#8 PEM, or an AES-256-GCM envelope when AUTHZ_MASTER_KEY is set.
  private_key  text not null,
  encrypted    boolean not null,
  created_at   timestamptz not null,
  retired_at   timestamptz,
  expires_at   timestamptz
);
