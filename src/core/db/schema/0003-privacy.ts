/**
 * Curated memories carry a sensitivity like events do, so that reads for a channel can leave
 * out what that channel may not show. 'secret' is refused before it gets here.
 */
export const privacy = `
ALTER TABLE memories ADD COLUMN sensitivity text NOT NULL DEFAULT 'none'
  CHECK (sensitivity IN ('none','low','high'));
`
