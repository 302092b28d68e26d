/*
 * creds_provider.h - the interface between the credential chain (creds.c)
 * and each source of credentials (creds_env.c, creds_webid.c,
 * creds_profile.c with creds_process.c, creds_container.c, creds_imds.c),
 * plus the helpers they share. Adding a source is one constructor here, its
 * file, and one line in creds.c's order table. Not for users of
 * credentials: they include creds.h.
 */
#ifndef TWICE_CREDS_PROVIDER_H
#define TWICE_CREDS_PROVIDER_H

#include <stddef.h>
#include <time.h>

struct creds;
struct flag;
struct http_client;

/* What the chain lends a provider for one resolve call. */
struct creds_ctx {
    const char *region;        /* the configured region, or NULL (STS endpoint) */
    const struct flag *cancel; /* raised: the chain is being freed, give up */
};

struct creds_provider {
    /* What error texts call it: "env", "profile default". Owned by the
     * provider, valid until free. */
    const char *label;
    /*
     * Fill *out (creds_set) and return 1; or return 0 when this source is
     * not configured or has nothing, so the chain goes on; or -1 when the
     * source is configured but failed (STS refused, the container endpoint
     * answered 500, credential_process exited 1) or on ENOMEM: the chain
     * stops there, as the AWS SDKs do, rather than quietly falling back to
     * another identity. For 0 and -1, write the reason into why: never a
     * secret. Only the chain's refresh thread calls it, so one call at a
     * time per provider, without the chain's lock; it may block (bounded by
     * its timeouts, and cut short by ctx->cancel).
     */
    int (*resolve)(struct creds_provider *p, const struct creds_ctx *ctx, struct creds *out,
                   char *why, size_t whylen);
    void (*free)(struct creds_provider *p);
};

/* The constructors take the chain's profile name (never NULL) and return
 * NULL on ENOMEM. */
struct creds_provider *creds_provider_env_new(const char *profile);
struct creds_provider *creds_provider_webid_new(const char *profile);
struct creds_provider *creds_provider_profile_new(const char *profile);
struct creds_provider *creds_provider_container_new(const char *profile);
struct creds_provider *creds_provider_imds_new(const char *profile);

/* The variables' keys (creds_env.c), whatever the profile says: 1, 0 with
 * why when they are not set (or not whole), -1 on ENOMEM. */
int creds_env_read(struct creds *out, char *why, size_t whylen);

/* Fill c with copies of the strings (token may be NULL); provider is cut
 * to fit. 0, or -1 on ENOMEM with c left empty. */
int creds_set(struct creds *c, const char *access_key_id, const char *secret_access_key,
              const char *session_token, time_t expiration, const char *provider);

/* "2024-05-01T12:00:00Z", with optional fractional seconds and a "+hh:mm"
 * or "-hhmm" offset instead of Z (no zone: UTC), the forms AWS services,
 * IMDS and AWS_CREDENTIAL_EXPIRATION use. 0, or -1 if s is not one. */
int creds_parse_time(const char *s, time_t *out);

/* Whether the variable says true (any case). */
int creds_env_true(const char *name);

/* What creds_from_json insists on, besides AccessKeyId and SecretAccessKey. */
#define CREDS_JSON_EXPIRATION 1 /* an Expiration member */
#define CREDS_JSON_VERSION_1  2 /* "Version": 1 (credential_process) */
#define CREDS_JSON_SUCCESS    4 /* "Code", when present, is "Success" (IMDS) */

/*
 * A JSON credential document, the container endpoint's and IMDS's form
 * ({"AccessKeyId", "SecretAccessKey", "Token", "Expiration"}) or
 * credential_process's ({"Version": 1, ..., "SessionToken"}): token_key
 * names the token's member; flags are CREDS_JSON_*. 1 with *out filled, 0
 * with why when the document is not one (never quoting it: it may hold
 * secrets), -1 on ENOMEM. The parsed copies of the secrets are wiped
 * before they are freed; text is the caller's to wipe.
 */
int creds_from_json(const char *text, size_t len, const char *token_key, unsigned flags,
                    const char *provider, struct creds *out, char *why, size_t whylen);

/* Read a small file (a token) whole into a new string the caller wipes
 * and frees, with trailing blanks and newlines cut; NULL with errno
 * (EFBIG past max bytes). */
char *creds_read_token_file(const char *path, size_t max);

/* The shared client of the network providers, made on first use (one per
 * provider: only the refresh thread uses it). NULL when curl fails. */
struct http_client *creds_http(struct http_client **slot);

/* ---- profiles of the shared files (creds_profile.c) ---- */

struct awsconfig_section;

/*
 * A profile's own credentials, as the profile source finds them but
 * without assume-role: the credentials file's keys, its
 * credential_process, the config file's keys (SSO profiles refused). The
 * source of an assume-role profile. 1, 0 with why (what each file lacks),
 * or -1 with why (credential_process failed, SSO, ENOMEM).
 */
int creds_profile_own(const char *profile, const struct creds_ctx *ctx, struct creds *out,
                      char *why, size_t whylen);

/* A key of a profile: the credentials file's value (cred) if set and not
 * empty, else the config file's (conf); either section may be NULL. */
const char *creds_profile_get(const struct awsconfig_section *cred,
                              const struct awsconfig_section *conf, const char *key);

/* Whether the config file's section is an SSO (IAM Identity Center)
 * profile: sso_session or sso_start_url. */
int creds_profile_sso(const struct awsconfig_section *conf);
/* Why an SSO profile is refused, and the way around (credential_process
 * with `aws configure export-credentials`). */
void creds_profile_sso_refusal(const char *profile, char *why, size_t whylen);

/* ---- assume-role profiles (creds_assume.c) ---- */

/* Whether a profile's sections (either may be NULL) make it an assume-role
 * profile: role_arn with source_profile or credential_source. */
int creds_assume_profile(const struct awsconfig_section *cred,
                         const struct awsconfig_section *conf);

/*
 * Credentials for the assume-role profile `profile`: the credentials of
 * its source (source_profile, followed through chained roles to a profile
 * with credentials of its own, or credential_source Environment,
 * Ec2InstanceMetadata or EcsContainer), then one STS AssumeRole per role
 * of the chain, each signed with the credentials before it. *http is made
 * on first use. 1, or -1 with why: a source_profile loop or a chain longer
 * than 8, a source without credentials, mfa_serial (nobody can type a
 * code), STS refused. Called again at every refresh.
 */
int creds_assume_resolve(const char *profile, const struct creds_ctx *ctx,
                         struct http_client **http, struct creds *out, char *why, size_t whylen);

/* ---- credential_process (creds_process.c) ---- */

#define CREDS_PROCESS_TIMEOUT_MS 30000
#define CREDS_PROCESS_MAX_OUTPUT 65536

/*
 * Run command through /bin/sh -c with stdin from /dev/null, in its own
 * process group, and collect up to cap bytes of its standard output into
 * out (which holds cap + 1: a NUL is added; *len the length). Past
 * timeout_ms, on cancel, or when the output outgrows out, the process
 * group is killed. 0 when the command exited 0, else -1 with why, which
 * ends with the last characters of its standard error, escaped ("; stderr:
 * run aws sso login"): tools put their hints there and the secrets on
 * standard output, which is never shown. out may hold secrets: the caller
 * wipes it.
 */
int creds_process_run(const char *command, long timeout_ms, const struct flag *cancel, char *out,
                      size_t cap, size_t *len, char *why, size_t whylen);

/* Run a profile's credential_process and read its JSON: 1, or -1 with why
 * (a configured source that failed). */
int creds_process_resolve(const char *command, const char *profile, const struct creds_ctx *ctx,
                          struct creds *out, char *why, size_t whylen);

/* ---- STS, the Query API (creds_sts.c) ---- */

struct buf;

/*
 * An STS reply (AssumeRole, AssumeRoleWithWebIdentity): 1 with *out from
 * Credentials/{AccessKeyId, SecretAccessKey, SessionToken, Expiration},
 * named provider; 0 with why when the XML has no such credentials (an
 * ErrorResponse's Code and Message go into why), -1 on ENOMEM.
 */
int creds_sts_parse(const char *xml, size_t len, const char *provider, struct creds *out,
                    char *why, size_t whylen);

/* Append "&name=value" (no '&' first) to a form body, value URI-encoded. */
void creds_form_put(struct buf *b, const char *name, const char *value);

/*
 * POST form (the Query API's Action=...&Version=... body) to the STS url
 * and read the credentials of the reply (named provider). signer NULL:
 * unsigned (AssumeRoleWithWebIdentity); else signed with SigV4 for region
 * and service "sts" (AssumeRole). *http is made on first use. 1, or -1
 * with why ("STS URL: ACTION: HTTP 403: AccessDenied: ..."), never a
 * secret.
 */
int creds_sts_call(struct http_client **http, const struct creds_ctx *ctx, const char *url,
                   const char *action, const struct buf *form, const struct creds *signer,
                   const char *region, const char *provider, struct creds *out, char *why,
                   size_t whylen);

/* ---- container credentials (creds_container.c) ---- */

/* Whether AWS_CONTAINER_CREDENTIALS_FULL_URI may be used: https to any
 * host, or http only to loopback, 169.254.170.2, 169.254.170.23 or
 * [fd00:ec2::23]. No user info ("@") is accepted. */
int creds_container_uri_allowed(const char *uri);

#endif
