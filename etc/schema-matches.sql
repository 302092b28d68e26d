-- schema-matches.sql - the tables of the match-recompute plugin: roles with
-- weighted skills, candidates with skills, and the computed matches. Not
-- the idempotency table (twice creates that itself) and not a migration
-- tool: every statement is IF NOT EXISTS, so running it again is harmless.
--
-- Load it into the schema the plugin's `schema` setting names (default
-- public), e.g.:  psql -d app -c 'SET search_path TO public' -f schema-matches.sql
--
-- The score of a candidate for a role (what match-recompute writes):
--
--     score = sum(weight of the role's skills the candidate has)
--             / sum(weight of all the role's skills)
--
-- rounded to 4 decimals, so 0 < score <= 1. Skills are compared without
-- case and surrounding spaces ("Go" matches " go"). A candidate with no
-- skill of the role gets no row (no zero scores are stored); a role without
-- skills has no matches. A recompute replaces all of one role's rows inside
-- the job's transaction, and records the role version it was computed for.

-- A role (a job opening). `version` goes up on every edit of the role or
-- its skills; the producer of match-recompute messages sends it along.
CREATE TABLE IF NOT EXISTS roles (
    id      bigint  PRIMARY KEY,
    title   text    NOT NULL,
    version integer NOT NULL DEFAULT 1 CHECK (version >= 1)
);

-- The skills a role asks for, each with a positive weight (how much it
-- counts). One row per skill; "Go" and "go " are the same skill.
CREATE TABLE IF NOT EXISTS role_skills (
    role_id bigint  NOT NULL REFERENCES roles (id) ON DELETE CASCADE,
    skill   text    NOT NULL CHECK (btrim(skill) <> ''),
    weight  numeric NOT NULL DEFAULT 1 CHECK (weight > 0),
    PRIMARY KEY (role_id, skill)
);
CREATE UNIQUE INDEX IF NOT EXISTS role_skills_folded
    ON role_skills (role_id, lower(btrim(skill)));

-- A candidate and the skills they have (unweighted).
CREATE TABLE IF NOT EXISTS candidates (
    id     bigint PRIMARY KEY,
    name   text   NOT NULL,
    skills text[] NOT NULL DEFAULT '{}'
);

-- The computed matches: one row per role and candidate with a score above
-- zero. Written only by match-recompute.
CREATE TABLE IF NOT EXISTS matches (
    role_id              bigint       NOT NULL REFERENCES roles (id) ON DELETE CASCADE,
    candidate_id         bigint       NOT NULL REFERENCES candidates (id) ON DELETE CASCADE,
    score                numeric(5,4) NOT NULL CHECK (score > 0 AND score <= 1),
    computed_for_version integer      NOT NULL,
    computed_at          timestamptz  NOT NULL DEFAULT now(),
    PRIMARY KEY (role_id, candidate_id)
);
CREATE INDEX IF NOT EXISTS matches_by_candidate ON matches (candidate_id);
