/**
 * The vault that seals `high` content at rest (src/core/privacy/vault.ts): the memory's data key,
 * wrapped under the vault key, at most one row. Never exported: a file holds plain values
 * (under its own passphrase) and the memory that imports it seals them with its own key.
 *
 * A sealed memory keeps no keyword terms: its text is ciphertext.
 */
/** A memory's keyword terms: none for sealed text. */
const SEALED_TSV = `CASE WHEN starts_with(content, U&'\\E000sealed1:') THEN ''::tsvector ELSE to_tsvector('english', content) END`

export const vault = `
CREATE TABLE vault (
  id          boolean PRIMARY KEY DEFAULT true CHECK (id),
  kind        text NOT NULL CHECK (kind IN ('passphrase', 'key')),
  salt        bytea,
  iterations  int,
  wrapped     bytea NOT NULL,
  created_at  timestamptz NOT NULL
);

-- The rows a vault must still seal (normally none): found at each open with a vault, and after
-- an import or an archive restore, without reading every event.
CREATE INDEX events_unsealed ON events (id) WHERE sensitivity = 'high' AND NOT meta ? 'sealed';
CREATE INDEX memories_unsealed ON memories (id)
  WHERE sensitivity = 'high' AND NOT starts_with(content, U&'\\E000sealed1:');

-- PostgreSQL 17 changes a generated column in place; a server before it (PGlite is 17) gets
-- the column made again, with its index.
DO $$ BEGIN
  IF current_setting('server_version_num')::int >= 170000 THEN
    EXECUTE $sql$ALTER TABLE memories ALTER COLUMN tsv SET EXPRESSION AS (${SEALED_TSV})$sql$;
  ELSE
    ALTER TABLE memories DROP COLUMN tsv;
    EXECUTE $sql$ALTER TABLE memories ADD COLUMN tsv tsvector GENERATED ALWAYS AS (${SEALED_TSV}) STORED$sql$;
    CREATE INDEX memories_tsv ON memories USING gin (tsv);
  END IF;
END $$;
`
