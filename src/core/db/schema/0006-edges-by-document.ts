/**
 * Edges by document.
 *
 * Familiarity (how many conversations touched a document) and the context bundle's linked
 * replies (other conversations' turns that touched a document this one touched) read every
 * edge into any version of a document. Reached version by version, that was one index probe
 * per version (a document read 25 times has 25), and the planner preferred scanning every
 * edge. Each edge into a document version now carries the version's document, filled on
 * insert, and one index range holds a document's edges, newest first.
 */
export const edgesByDocument = `
ALTER TABLE edges ADD COLUMN document_id text;

-- The backfill writes a column derived from the edge's own dst, which the append-only guard
-- would refuse: it is lifted for this statement only.
SELECT set_config('engram.forgetting', 'on', true);
UPDATE edges e SET document_id = v.document_id FROM doc_versions v WHERE v.id = e.dst;
SELECT set_config('engram.forgetting', 'off', true);

CREATE INDEX edges_document ON edges (document_id, created_at DESC, id)
  INCLUDE (conversation_id, tombstoned_at, src, tenant_id)
  WHERE document_id IS NOT NULL;

-- A version is written before any edge to it, and never changes document.
CREATE FUNCTION edges_fill_document() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.document_id IS NULL THEN
    SELECT v.document_id INTO NEW.document_id FROM doc_versions v WHERE v.id = NEW.dst;
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER edges_fill_document BEFORE INSERT ON edges
  FOR EACH ROW EXECUTE FUNCTION edges_fill_document();
`
