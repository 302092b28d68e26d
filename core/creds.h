/*
 * creds.h - AWS credentials, found the way the AWS SDKs find them.
 *
 * A creds_chain tries providers in the SDKs' order and keeps the first that
 * answers. Today: environment variables, then the shared credentials and
 * config files (AWS_PROFILE, AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE).
 * Temporary credentials carry an expiration; refreshing them is the
 * chain's job, never the request path's.
 *
 * Secrets live only in struct creds and are wiped when freed. Nothing here
 * logs; error texts never contain a secret.
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
    char provider[32];   /* "env", "profile:NAME", ... for `twicectl whoami` */
};

/* Overwrite the secrets with zeros and free them. */
void creds_clear(struct creds *c);
/* Deep copy; 0 or -1 (ENOMEM). */
int creds_copy(struct creds *dst, const struct creds *src);

struct creds_chain;

/*
 * A chain for `profile` (NULL: AWS_PROFILE, else "default"). It resolves
 * lazily: creating it never fails for lack of credentials. NULL on ENOMEM.
 */
struct creds_chain *creds_chain_new(const char *profile);
void creds_chain_free(struct creds_chain *chain);

/*
 * Copy the current credentials into *out (creds_clear it afterwards).
 * Thread-safe. Returns 0, or -1 with err saying which providers were tried
 * ("no AWS credentials: tried env (AWS_ACCESS_KEY_ID not set), profile
 * default (~/.aws/credentials: no such file)").
 */
int creds_get(struct creds_chain *chain, struct creds *out, char *err, size_t errlen);

#endif
