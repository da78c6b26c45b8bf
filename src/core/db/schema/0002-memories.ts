/**
 * Curated memories with their audit trail, policy memory (kv revisions) and entity graph
 * nodes. Memories are mutable rows whose every change is logged in memory_history; kv and
 * node revisions are append-only.
 */
export const memories = `
CREATE TABLE memories (
  id            text PRIMARY KEY,
  tenant_id     text NOT NULL DEFAULT 'default',
  user_id       text,
  agent_id      text,
  run_id        text,
  project_id    text,
  scope         text NOT NULL CHECK (scope IN ('user','project','global')),
  category      text NOT NULL CHECK (category IN ('preference','pattern','correction','fact','instruction',
                                                   'convention','decision','constraint','procedure')),
  source        text NOT NULL CHECK (source IN ('explicit','inferred','corrected')),
  confidence    double precision NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
  content       text NOT NULL,
  hash          text NOT NULL,
  metadata      jsonb NOT NULL DEFAULT '{}',
  tsv           tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
  vector        vector,
  embed_model   text,
  status        text NOT NULL DEFAULT 'active' CHECK (status IN ('active','superseded','deleted')),
  superseded_by text,
  use_count     int NOT NULL DEFAULT 0,
  last_used_at  timestamptz,
  created_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL
);
CREATE INDEX memories_scope ON memories (tenant_id, user_id, scope, status);
CREATE INDEX memories_hash ON memories (tenant_id, hash) WHERE status = 'active';
CREATE INDEX memories_tsv ON memories USING gin (tsv);

CREATE TABLE memory_history (
  id          text PRIMARY KEY,
  memory_id   text NOT NULL,
  event       text NOT NULL CHECK (event IN ('ADD','UPDATE','DELETE')),
  old_value   text,
  new_value   text,
  changes     jsonb NOT NULL DEFAULT '{}',
  is_deleted  boolean NOT NULL DEFAULT false,
  tenant_id   text NOT NULL,
  user_id     text,
  agent_id    text,
  run_id      text,
  created_at  timestamptz NOT NULL
);
CREATE INDEX memory_history_memory ON memory_history (memory_id, created_at, id);

-- Named groups of memories; membership is a BELONGS_TO_CONTEXT edge.
CREATE TABLE memory_contexts (
  id          text PRIMARY KEY,
  tenant_id   text NOT NULL,
  user_id     text,
  name        text NOT NULL,
  description text,
  priority    double precision NOT NULL DEFAULT 0.5,
  created_at  timestamptz NOT NULL
);
CREATE UNIQUE INDEX memory_contexts_name ON memory_contexts (tenant_id, coalesce(user_id, ''), name);

-- Policy memory: every put is a new revision; a delete is a tombstone revision.
CREATE TABLE kv (
  id          text PRIMARY KEY,
  tenant_id   text NOT NULL DEFAULT 'default',
  scope       text NOT NULL,
  namespace   text NOT NULL,
  key         text NOT NULL,
  rev         int NOT NULL CHECK (rev > 0),
  payload     jsonb,
  deleted     boolean NOT NULL DEFAULT false,
  run_id      text,
  task_id     text,
  created_at  timestamptz NOT NULL,
  UNIQUE (tenant_id, scope, namespace, key, rev)
);

-- Entity graph nodes (files, symbols, modules, decisions …), one row per revision.
CREATE TABLE nodes (
  id          text NOT NULL,
  rev         int NOT NULL CHECK (rev > 0),
  tenant_id   text NOT NULL DEFAULT 'default',
  type        text NOT NULL,
  payload     jsonb NOT NULL DEFAULT '{}',
  scope       text,
  run_id      text,
  task_id     text,
  tombstone   boolean NOT NULL DEFAULT false,
  created_at  timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id, rev)
);
CREATE INDEX nodes_type ON nodes (tenant_id, type);

CREATE INDEX edges_tombstoned ON edges (tombstoned_at) WHERE tombstoned_at IS NOT NULL;

CREATE TRIGGER memory_history_append_only BEFORE UPDATE OR DELETE ON memory_history
  FOR EACH ROW EXECUTE FUNCTION engram_append_only();
CREATE TRIGGER kv_append_only BEFORE UPDATE OR DELETE ON kv
  FOR EACH ROW EXECUTE FUNCTION engram_append_only();

INSERT INTO relations (name, description, builtin) VALUES
  ('SUPERSEDES', 'a newer memory replaces an older one', true),
  ('DERIVED_FROM', 'a memory was inferred from this row', true),
  ('RELEVANT_TO', 'a memory matters when working with this row', true),
  ('BELONGS_TO_CONTEXT', 'a memory is filed under a memory context', true),
  ('defines', 'file → symbol', true),
  ('references', 'symbol → symbol', true),
  ('calls', 'function → function', true),
  ('imports', 'module → module', true),
  ('tests', 'test → code unit', true),
  ('implements', 'class → interface or contract', true),
  ('constrains', 'constraint → entity', true),
  ('decided_for', 'decision → entity or scope', true),
  ('derived_from', 'item → the tool result or file it came from', true),
  ('supersedes', 'new item → the item it replaces', true)
ON CONFLICT (name) DO NOTHING;
`
