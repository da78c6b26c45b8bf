/**
 * The versions a conversation wrote with no event to link them from (`observeDocument`
 * without `eventId`): the only touches of a document that no edge records. Search's
 * familiarity reads them per document, so the index holds those versions alone.
 */
export const observedVersions = `
CREATE INDEX doc_versions_observed ON doc_versions (document_id)
  WHERE event_id IS NULL AND conversation_id IS NOT NULL;
`
