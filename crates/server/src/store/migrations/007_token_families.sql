-- Token families (issue 43). Every access token, refresh token and code
-- knows the grant it descends from (`family`: one per authorization code or
-- client-credentials grant, kept by every refresh), and the pair it was
-- issued in (`pair`). A spent refresh token or code is kept, marked `spent`
-- (when), rather than deleted, so that its replay is recognised and revokes
-- the whole family (RFC 9700 §4.14, RFC 6749 §4.1.2).
ALTER TABLE tokens ADD COLUMN family TEXT NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN pair TEXT NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN spent INTEGER NOT NULL DEFAULT 0;
-- Tokens issued before: each its own family and pair, so revoking one
-- family never reaches another token.
UPDATE tokens SET family = selector, pair = selector;
CREATE INDEX tokens_family ON tokens(family);
CREATE INDEX tokens_pair ON tokens(pair);
