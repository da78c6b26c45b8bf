/**
 * For memories that sync with a server memory (src/core/sync). None of these tables is
 * exported: a device's tokens and cursors belong to the database that holds them.
 *
 * - `sync_devices` (on a server): the devices that may sync, each with the SHA-256 of its
 *   token (the token itself is never stored) and the one tenant it syncs.
 * - `sync_received`: which device sent each row, when it arrived, and for an event the turn
 *   number its sender gave it. A server's pull lists what arrived in its window even when the
 *   row is dated long before; a pushed turn is told apart from another device's turn of the
 *   same number, and a later event of a turn the server moved follows it. A device notes
 *   what its server sent, so it never takes those rows for its own.
 * - `sync_vaults` (on a server): each tenant's vault key as its devices hold it, wrapped
 *   under their passphrase (the server can unwrap none), and a keyed id of the key, so a
 *   device with another key is refused. The server keeps their sealed rows sealed.
 * - `sync_remotes` (on a device): for each server, where the last pull ended (the server's
 *   time) and up to when this device's own rows were pushed (the device's time).
 */
export const sync = `
CREATE TABLE sync_devices (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  tenant_id   text NOT NULL,
  token_hash  text NOT NULL UNIQUE,
  created_at  timestamptz NOT NULL,
  revoked_at  timestamptz,
  last_sync_at timestamptz
);

CREATE TABLE sync_received (
  tbl         text NOT NULL,
  row_id      text NOT NULL,
  device_id   text NOT NULL,
  received_at timestamptz NOT NULL,
  turn_index  int,
  PRIMARY KEY (tbl, row_id)
);
CREATE INDEX sync_received_at ON sync_received (received_at);

CREATE TABLE sync_vaults (
  tenant_id   text PRIMARY KEY,
  key_id      text NOT NULL,
  kind        text NOT NULL CHECK (kind IN ('passphrase','key')),
  salt        bytea,
  iterations  int,
  wrapped     bytea NOT NULL,
  created_at  timestamptz NOT NULL
);

CREATE TABLE sync_remotes (
  url          text PRIMARY KEY,
  tenant_id    text NOT NULL,
  pulled_until timestamptz,
  pushed_until timestamptz
);
`
