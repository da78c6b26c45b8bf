/**
 * The base schema. Ground truth (events, doc_versions, memories' revisions, kv revisions,
 * edges) is append-only; chunks and vectors are derived and can be rebuilt.
 */
export const base = `
-- A server without pgvector gets a stand-in type that holds no vectors: the memory is
-- keyword-only there (src/node/postgres.ts). PGlite always has pgvector.
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
    CREATE EXTENSION IF NOT EXISTS vector;
  ELSE
    CREATE DOMAIN vector AS real[];
  END IF;
END $$;

CREATE TABLE engram_meta (
  key   text PRIMARY KEY,
  value jsonb NOT NULL
);

-- Append-only event log. created_at is the event's own time (callers may back-date imports);
-- seq is the insertion order, which breaks ties between events of the same instant.
CREATE TABLE events (
  id              text PRIMARY KEY,
  seq             bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  kind            text NOT NULL CHECK (kind IN ('message','tool_call','tool_result','decision','task_update','artifact')),
  tenant_id       text NOT NULL DEFAULT 'default',
  user_id         text,
  agent_id        text,
  conversation_id text NOT NULL,
  run_id          text,
  turn_index      int,
  channel         text NOT NULL DEFAULT 'private' CHECK (channel IN ('private','public','team','agent')),
  actor_type      text NOT NULL CHECK (actor_type IN ('human','agent','tool')),
  actor_id        text NOT NULL,
  -- 'secret' is refused before it gets here: secrets are never stored.
  sensitivity     text NOT NULL DEFAULT 'none' CHECK (sensitivity IN ('none','low','high')),
  tags            text[] NOT NULL DEFAULT '{}',
  content         jsonb NOT NULL,
  refs            jsonb NOT NULL DEFAULT '[]',
  meta            jsonb NOT NULL DEFAULT '{}',
  created_at      timestamptz NOT NULL
);
CREATE INDEX events_conversation ON events (tenant_id, conversation_id, created_at, seq);
CREATE INDEX events_scope ON events (tenant_id, user_id, agent_id, created_at);
CREATE INDEX events_created ON events (created_at);
CREATE INDEX events_tags ON events USING gin (tags);
CREATE INDEX events_turns ON events (tenant_id, conversation_id, turn_index) WHERE turn_index IS NOT NULL;

-- Full bytes of oversized tool output; the event keeps an excerpt.
CREATE TABLE artifacts (
  id          text PRIMARY KEY,
  event_id    text NOT NULL,
  tenant_id   text NOT NULL,
  media_type  text NOT NULL DEFAULT 'text/plain',
  bytes       int NOT NULL,
  sha256      text NOT NULL,
  content     text NOT NULL,
  created_at  timestamptz NOT NULL
);
CREATE INDEX artifacts_event ON artifacts (event_id);

-- Retrieval units cut from events and memories (derived data).
CREATE TABLE chunks (
  id              text PRIMARY KEY,
  source_id       text NOT NULL,
  ord             int NOT NULL,
  text            text NOT NULL,
  token_est       int NOT NULL,
  tsv             tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
  embedding       vector,
  embed_model     text,
  tenant_id       text NOT NULL,
  user_id         text,
  agent_id        text,
  conversation_id text,
  run_id          text,
  kind            text NOT NULL,
  channel         text NOT NULL,
  sensitivity     text NOT NULL,
  tags            text[] NOT NULL DEFAULT '{}',
  created_at      timestamptz NOT NULL,
  UNIQUE (source_id, ord)
);
CREATE INDEX chunks_tsv ON chunks USING gin (tsv);
CREATE INDEX chunks_scope ON chunks (tenant_id, user_id, agent_id, conversation_id);
CREATE INDEX chunks_unembedded ON chunks (created_at) WHERE embedding IS NULL;
CREATE INDEX chunks_created ON chunks (tenant_id, created_at);

-- Document hypernodes and their versions.
CREATE TABLE documents (
  id            text PRIMARY KEY,
  tenant_id     text NOT NULL,
  canonical_key text NOT NULL,
  key_kind      text NOT NULL CHECK (key_kind IN ('path','url')),
  mode          text NOT NULL CHECK (mode IN ('local','global')),
  created_at    timestamptz NOT NULL,
  UNIQUE (tenant_id, key_kind, canonical_key)
);

CREATE TABLE doc_versions (
  id              text PRIMARY KEY,
  document_id     text NOT NULL REFERENCES documents(id),
  version         int NOT NULL,
  content_hash    text NOT NULL,
  content         text,
  bytes           int,
  provenance      text NOT NULL CHECK (provenance IN ('agent','external','initial')),
  conversation_id text,
  event_id        text,
  created_at      timestamptz NOT NULL,
  UNIQUE (document_id, version)
);
CREATE INDEX doc_versions_hash ON doc_versions (document_id, content_hash);

-- content is NULL when only a hash was observed, or after forget() cleared it.
CREATE INDEX doc_versions_created ON doc_versions (created_at);
CREATE INDEX doc_versions_conversation ON doc_versions (conversation_id);

-- The graph: interned relation names and edges between any two ids.
CREATE TABLE relations (
  id          serial PRIMARY KEY,
  name        text NOT NULL UNIQUE,
  description text,
  builtin     boolean NOT NULL DEFAULT false,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE edges (
  id              text PRIMARY KEY,
  src             text NOT NULL,
  rel             int NOT NULL REFERENCES relations(id),
  dst             text NOT NULL,
  props           jsonb NOT NULL DEFAULT '{}',
  tenant_id       text NOT NULL DEFAULT 'default',
  conversation_id text,
  run_id          text,
  task_id         text,
  turn_index      int,
  created_at      timestamptz NOT NULL,
  tombstoned_at   timestamptz
);
CREATE INDEX edges_out ON edges (src, rel, created_at);
CREATE INDEX edges_in ON edges (dst, rel, created_at);
CREATE INDEX edges_conversation ON edges (tenant_id, conversation_id);
CREATE INDEX edges_created ON edges (created_at);

INSERT INTO relations (name, description, builtin) VALUES
  ('MESSAGE',    'a user message to the agent reply that answered it', true),
  ('VERSION_OF', 'a document version to its document', true),
  ('REFERS_TO',  'an event to a row it cites in its refs', true),
  ('RESULT',     'a tool call to the tool result it produced', true);

-- A content-free record of every forget() — what was deleted, never the content itself.
CREATE TABLE forget_log (
  id          text PRIMARY KEY,
  target      jsonb NOT NULL,
  counts      jsonb NOT NULL,
  reason      text,
  created_at  timestamptz NOT NULL
);
CREATE INDEX forget_log_created ON forget_log (created_at);

-- Ground truth is append-only: UPDATE and DELETE are refused, except inside forget(), which
-- sets engram.forgetting for its own transaction only (SET LOCAL).
CREATE FUNCTION engram_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('engram.forgetting', true) = 'on' THEN
    IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'engram: % is append-only (% refused)', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'EG001';
END
$$;

-- Edges may additionally be tombstoned once (tombstoned_at goes from NULL to a time, nothing
-- else changes), and a tombstoned edge may be compacted away.
CREATE FUNCTION engram_edges_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('engram.forgetting', true) = 'on' THEN
    IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
    RETURN NEW;
  END IF;
  IF TG_OP = 'DELETE' AND OLD.tombstoned_at IS NOT NULL THEN
    RETURN OLD;
  END IF;
  IF TG_OP = 'UPDATE' AND OLD.tombstoned_at IS NULL AND NEW.tombstoned_at IS NOT NULL
     AND (to_jsonb(NEW) - 'tombstoned_at') = (to_jsonb(OLD) - 'tombstoned_at') THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'engram: edges are append-only (% refused; only a tombstone may be set)', TG_OP
    USING ERRCODE = 'EG001';
END
$$;

CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
  FOR EACH ROW EXECUTE FUNCTION engram_append_only();
CREATE TRIGGER doc_versions_append_only BEFORE UPDATE OR DELETE ON doc_versions
  FOR EACH ROW EXECUTE FUNCTION engram_append_only();
CREATE TRIGGER forget_log_append_only BEFORE UPDATE OR DELETE ON forget_log
  FOR EACH ROW EXECUTE FUNCTION engram_append_only();
CREATE TRIGGER edges_append_only BEFORE UPDATE OR DELETE ON edges
  FOR EACH ROW EXECUTE FUNCTION engram_edges_guard();

-- Exact row counts of every table, for stats(): table names come from the catalog, never input.
CREATE FUNCTION engram_table_counts() RETURNS TABLE (table_name text, n bigint) LANGUAGE plpgsql AS $$
DECLARE t text;
BEGIN
  FOR t IN SELECT c.relname::text FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
           WHERE ns.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY c.relname
  LOOP
    table_name := t;
    EXECUTE format('SELECT count(*) FROM %I', t) INTO n;
    RETURN NEXT;
  END LOOP;
END
$$;
`
