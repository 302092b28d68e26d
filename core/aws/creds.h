/*
 * creds.h - AWS credentials, found the way the AWS SDKs find them.
 *
 * A creds_chain tries its sources in the SDKs' order and keeps the first
 * that answers:
 *   1. env           AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY [+ AWS_SESSION_TOKEN]
 *   2. web-identity  AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN (or the profile's
 *                    web_identity_token_file + role_arn): STS AssumeRoleWithWebIdentity
 *   3. profile       an assume-role profile (role_arn with source_profile or
 *                    credential_source: STS AssumeRole), else the shared
 *                    credentials file, then the profile's credential_process,
 *                    then the config file (AWS_PROFILE,
 *                    AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE); SSO
 *                    profiles are refused with the way around
 *   4. container     AWS_CONTAINER_CREDENTIALS_RELATIVE_URI / _FULL_URI (ECS, EKS Pod
 *                    Identity), with AWS_CONTAINER_AUTHORIZATION_TOKEN[_FILE]
 *   5. imds          EC2 instance metadata, IMDSv2; skipped when
 *                    AWS_EC2_METADATA_DISABLED=true; the IMDSv1 fallback is off unless
 *                    AWS_EC2_METADATA_V1_DISABLED=false is set explicitly
 * A source that is configured but fails stops the chain (no quiet fallback
 * to another identity).
 *
 * Temporary credentials are refreshed by a thread the chain owns, ahead of
 * their expiration: when min(15 minutes, half their lifetime) is left. A
 * failed refresh is retried with backoff while the cached credentials stay
 * in use until they expire. creds_get never waits for a network source
 * unless nothing valid is cached (the first call, or after expiry).
 *
 * Secrets live only in struct creds and are wiped when freed. Nothing here
 * logs; error texts never contain a secret. Not for signing (sigv4.h).
 */
#ifndef TWICE_CREDS_H
#define TWICE_CREDS_H

#include <stddef.h>
#include <time.h>

struct creds {
    char *access_key_id;
    char *secret_access_key;
    char *session_token; /* NULL for long-term credentials */
    time_t expiration;   /* 0: does not expire */
    char provider[32];   /* "env", "profile:NAME", "process:NAME", "web-identity",
                            "assume-role:NAME", "container", "imds": for
                            `twicectl whoami` */
};

/* Overwrite the secrets with zeros and free them. */
void creds_clear(struct creds *c);
/* Deep copy of credentials that have a key and a secret (what creds_set
 * made); 0 or -1 (ENOMEM). */
int creds_copy(struct creds *dst, const struct creds *src);

struct creds_chain;

/*
 * A chain for `profile` (NULL: AWS_PROFILE, else "default"). It resolves
 * lazily: creating it never fails for lack of credentials and starts no
 * thread. NULL on ENOMEM. A chain must not cross a fork(): make it in the
 * process that uses it.
 */
struct creds_chain *creds_chain_new(const char *profile);
/* Stops the refresh thread (cutting short a request in progress) and wipes
 * the cache. No creds_get may be running. */
void creds_chain_free(struct creds_chain *chain);

/*
 * The region the configuration names (aws.region), for the regional STS
 * endpoint of web identity; without it the chain uses AWS_REGION,
 * AWS_DEFAULT_REGION, the profile's region, else the global endpoint.
 * Call before the first creds_get. 0, or -1 on ENOMEM.
 */
int creds_chain_set_region(struct creds_chain *chain, const char *region);

/*
 * Copy the current credentials into *out (creds_clear it afterwards).
 * Thread-safe. Returns at once while valid credentials are cached; the
 * first call starts the refresh thread and waits for its first answer.
 * Returns 0, or -1 with err saying which sources were tried ("no AWS
 * credentials: tried env (AWS_ACCESS_KEY_ID not set), ...") or why the one
 * that answered failed.
 */
int creds_get(struct creds_chain *chain, struct creds *out, char *err, size_t errlen);

/*
 * AWS refused credentials the chain handed out (ExpiredToken,
 * InvalidClientTokenId: revoked, rotated or expired before their time).
 * Credentials without an expiration (the shared files, the environment, a
 * credential_process that names none) are otherwise never read again, so
 * a credentials file rotated on disk would only be seen after a restart:
 * ask the refresh thread to read the same source again now. Nothing
 * happens unless access_key_id is the cached set's, or when that set was
 * obtained less than 10 s ago (a refusal per request must not become a
 * fetch per request: STS, IMDS). The caller's own backoff does the rest.
 * Thread-safe; never waits for a source.
 */
void creds_refused(struct creds_chain *chain, const char *access_key_id);

/* When cached credentials expiring at `expiration`, obtained at
 * `obtained`, are refreshed: min(15 min, half the lifetime) before they
 * expire, but at least 20 s before (they count as expired 10 s before).
 * Pure; 0 for credentials that do not expire. */
time_t creds_refresh_time(time_t obtained, time_t expiration);

#endif
