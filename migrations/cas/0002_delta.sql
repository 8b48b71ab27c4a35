-- Delta storage: a blob with enc 2 is one zstd frame compressed with the
-- plain bytes of the blob named by base as its raw dictionary. depth is how
-- many such frames a read decodes (0 for raw and enc 1, base's depth + 1
-- for enc 2). The partial index finds a blob's dependents, which a delete
-- must never strand.
ALTER TABLE blobs ADD COLUMN base BLOB;
ALTER TABLE blobs ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
CREATE INDEX blobs_base ON blobs (base) WHERE base IS NOT NULL;
