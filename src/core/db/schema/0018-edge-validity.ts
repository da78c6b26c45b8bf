/**
 * When a link held in the world (`putEdge(…, { validFrom, validTo })`), apart from when the
 * memory learned it (`created_at`, read with `asOf`). Two links of the same nodes and
 * relation with different starts are two facts (worked at Acme 2015–2018, and again from
 * 2021). Appended like every edge: a new end is a new row, the old one tombstoned.
 */
export const edgeValidity = `
ALTER TABLE edges ADD COLUMN valid_from timestamptz;
ALTER TABLE edges ADD COLUMN valid_to timestamptz;
ALTER TABLE edges ADD CONSTRAINT edges_valid_period CHECK (valid_to IS NULL OR valid_from IS NULL OR valid_to > valid_from);
`
