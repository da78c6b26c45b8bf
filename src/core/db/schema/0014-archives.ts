/**
 * Conversations moved out of the live memory (`archives.create`): each archive holds one
 * conversation's events, artifacts, edges and chunk vectors as one compressed file in the
 * export format, so that restoring it is a merge import. Nothing in an archive is searched.
 * The event, user and agent ids are kept beside the file so that `forget` finds the archives
 * it must open. `conversation_hits` is when a search or a context last returned each
 * conversation, which `archives.create` reads to leave what is still being found.
 */
export const archives = `
CREATE TABLE archives (
  id              text PRIMARY KEY,
  tenant_id       text NOT NULL,
  conversation_id text NOT NULL,
  event_ids       text[] NOT NULL,
  user_ids        text[] NOT NULL,
  agent_ids       text[] NOT NULL,
  counts          jsonb NOT NULL,
  first_event_at  timestamptz NOT NULL,
  last_event_at   timestamptz NOT NULL,
  bytes           int NOT NULL,
  file            bytea NOT NULL,
  created_at      timestamptz NOT NULL
);
CREATE INDEX archives_conversation ON archives (tenant_id, conversation_id);
CREATE INDEX archives_events ON archives USING gin (event_ids);

CREATE TABLE conversation_hits (
  tenant_id       text NOT NULL,
  conversation_id text NOT NULL,
  last_hit_at     timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, conversation_id)
);
`
