/**
 * Identical document contents stored once. `documents.deduplicate()` keeps the content of the
 * earliest version holding it and empties the others, which name that version in `content_of`;
 * reading a version's content follows the link. Versions stay append-only: the one update
 * allowed outside `forget()` is that move, and only while `engram.deduplicating` is set for
 * the deduplicating transaction (SET LOCAL).
 */
export const sharedContents = `
ALTER TABLE doc_versions ADD COLUMN content_of text;
CREATE INDEX doc_versions_content_of ON doc_versions (content_of) WHERE content_of IS NOT NULL;

CREATE FUNCTION engram_doc_versions_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('engram.forgetting', true) = 'on' THEN
    IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
    RETURN NEW;
  END IF;
  IF TG_OP = 'UPDATE' AND current_setting('engram.deduplicating', true) = 'on'
     AND OLD.content IS NOT NULL AND NEW.content IS NULL
     AND OLD.content_of IS NULL AND NEW.content_of IS NOT NULL AND NEW.content_of <> NEW.id
     AND (to_jsonb(NEW) - 'content' - 'content_of') = (to_jsonb(OLD) - 'content' - 'content_of') THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'engram: % is append-only (% refused)', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'EG001';
END
$$;

DROP TRIGGER doc_versions_append_only ON doc_versions;
CREATE TRIGGER doc_versions_append_only BEFORE UPDATE OR DELETE ON doc_versions
  FOR EACH ROW EXECUTE FUNCTION engram_doc_versions_guard();
`
