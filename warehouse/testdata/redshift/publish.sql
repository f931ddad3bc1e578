-- first publish
BEGIN;
CREATE TABLE IF NOT EXISTS "mart"."sluice_published" ("target" VARCHAR(127) NOT NULL, "location" VARCHAR(65535) NOT NULL, "version" BIGINT NOT NULL, "rows" BIGINT NOT NULL, "run" VARCHAR(256) NOT NULL, "published_at" TIMESTAMPTZ NOT NULL, "identity" VARCHAR(65535));
LOCK "mart"."sluice_published";
SELECT count(*) FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name = 'identity';
-- when it counts none, records of an older sluice:
ALTER TABLE "mart"."sluice_published" ADD COLUMN "identity" VARCHAR(65535);
CREATE TABLE "mart"."events_new" ("id" bigint NOT NULL, "u" VARCHAR(36), "ts" timestamptz, "d" date, "dec" numeric(38,10), "i" integer, "f" double precision, "b" boolean, "s" VARCHAR(65535), "bin" VARBYTE(1024000));
COPY "mart"."events_new" FROM 's3://lake/events/_sluice_publish/redshift-mart.events-v7.manifest' IAM_ROLE 'arn:aws:iam::123456789012:role/sluice-loader' FORMAT AS PARQUET MANIFEST;
ALTER TABLE "mart"."events_new" RENAME TO "events";
DELETE FROM "mart"."sluice_published" WHERE "target" = $1;
INSERT INTO "mart"."sluice_published" ("target", "identity", "location", "version", "rows", "run", "published_at") VALUES ($1, $2, $3, $4, $5, $6, $7);
COMMIT;

-- replacing NAME
BEGIN;
CREATE TABLE IF NOT EXISTS "mart"."sluice_published" ("target" VARCHAR(127) NOT NULL, "location" VARCHAR(65535) NOT NULL, "version" BIGINT NOT NULL, "rows" BIGINT NOT NULL, "run" VARCHAR(256) NOT NULL, "published_at" TIMESTAMPTZ NOT NULL, "identity" VARCHAR(65535));
LOCK "mart"."sluice_published";
SELECT count(*) FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name = 'identity';
-- when it counts none, records of an older sluice:
ALTER TABLE "mart"."sluice_published" ADD COLUMN "identity" VARCHAR(65535);
CREATE TABLE "mart"."events_new" ("id" bigint NOT NULL, "u" VARCHAR(36), "ts" timestamptz, "d" date, "dec" numeric(38,10), "i" integer, "f" double precision, "b" boolean, "s" VARCHAR(65535), "bin" VARBYTE(1024000));
COPY "mart"."events_new" FROM 's3://lake/events/_sluice_publish/redshift-mart.events-v7.manifest' IAM_ROLE 'arn:aws:iam::123456789012:role/sluice-loader' FORMAT AS PARQUET MANIFEST;
ALTER TABLE "mart"."events" RENAME TO "events_old";
ALTER TABLE "mart"."events_new" RENAME TO "events";
DROP TABLE "mart"."events_old";
DELETE FROM "mart"."sluice_published" WHERE "target" = $1;
INSERT INTO "mart"."sluice_published" ("target", "identity", "location", "version", "rows", "run", "published_at") VALUES ($1, $2, $3, $4, $5, $6, $7);
COMMIT;

-- replacing NAME, --keep-old
BEGIN;
CREATE TABLE IF NOT EXISTS "mart"."sluice_published" ("target" VARCHAR(127) NOT NULL, "location" VARCHAR(65535) NOT NULL, "version" BIGINT NOT NULL, "rows" BIGINT NOT NULL, "run" VARCHAR(256) NOT NULL, "published_at" TIMESTAMPTZ NOT NULL, "identity" VARCHAR(65535));
LOCK "mart"."sluice_published";
SELECT count(*) FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name = 'identity';
-- when it counts none, records of an older sluice:
ALTER TABLE "mart"."sluice_published" ADD COLUMN "identity" VARCHAR(65535);
CREATE TABLE "mart"."events_new" ("id" bigint NOT NULL, "u" VARCHAR(36), "ts" timestamptz, "d" date, "dec" numeric(38,10), "i" integer, "f" double precision, "b" boolean, "s" VARCHAR(65535), "bin" VARBYTE(1024000));
COPY "mart"."events_new" FROM 's3://lake/events/_sluice_publish/redshift-mart.events-v7.manifest' IAM_ROLE 'arn:aws:iam::123456789012:role/sluice-loader' FORMAT AS PARQUET MANIFEST;
ALTER TABLE "mart"."events" RENAME TO "events_old";
ALTER TABLE "mart"."events_new" RENAME TO "events";
COMMENT ON TABLE "mart"."events_old" IS 'sluice publish: the mart.events that a publish with --keep-old replaced; the next publish of mart.events drops it';
DELETE FROM "mart"."sluice_published" WHERE "target" = $1;
INSERT INTO "mart"."sluice_published" ("target", "identity", "location", "version", "rows", "run", "published_at") VALUES ($1, $2, $3, $4, $5, $6, $7);
COMMIT;

-- replacing NAME and the NAME_old an earlier --keep-old kept
BEGIN;
CREATE TABLE IF NOT EXISTS "mart"."sluice_published" ("target" VARCHAR(127) NOT NULL, "location" VARCHAR(65535) NOT NULL, "version" BIGINT NOT NULL, "rows" BIGINT NOT NULL, "run" VARCHAR(256) NOT NULL, "published_at" TIMESTAMPTZ NOT NULL, "identity" VARCHAR(65535));
LOCK "mart"."sluice_published";
SELECT count(*) FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name = 'identity';
-- when it counts none, records of an older sluice:
ALTER TABLE "mart"."sluice_published" ADD COLUMN "identity" VARCHAR(65535);
CREATE TABLE "mart"."events_new" ("id" bigint NOT NULL, "u" VARCHAR(36), "ts" timestamptz, "d" date, "dec" numeric(38,10), "i" integer, "f" double precision, "b" boolean, "s" VARCHAR(65535), "bin" VARBYTE(1024000));
COPY "mart"."events_new" FROM 's3://lake/events/_sluice_publish/redshift-mart.events-v7.manifest' IAM_ROLE 'arn:aws:iam::123456789012:role/sluice-loader' FORMAT AS PARQUET MANIFEST;
DROP TABLE "mart"."events_old";
ALTER TABLE "mart"."events" RENAME TO "events_old";
ALTER TABLE "mart"."events_new" RENAME TO "events";
DROP TABLE "mart"."events_old";
DELETE FROM "mart"."sluice_published" WHERE "target" = $1;
INSERT INTO "mart"."sluice_published" ("target", "identity", "location", "version", "rows", "run", "published_at") VALUES ($1, $2, $3, $4, $5, $6, $7);
COMMIT;

