/*
 * creds_provider.h - the interface between the credential chain (creds.c)
 * and each source of credentials. Adding a source (web identity,
 * container, IMDS, credential_process) is one new constructor here, its
 * file, and one line in creds.c's order table. Not for users of
 * credentials: they include creds.h.
 */
#ifndef TWICE_CREDS_PROVIDER_H
#define TWICE_CREDS_PROVIDER_H

#include <stddef.h>
#include <time.h>

struct creds;

struct creds_provider {
    /* What error texts call it: "env", "profile default". Owned by the
     * provider, valid until free. */
    const char *label;
    /*
     * Fill *out (creds_set) and return 1; or return 0 when this source has
     * no credentials, so the chain goes on; or -1 on a failure that must
     * stop the chain (ENOMEM). For 0 and -1, write the reason into why
     * ("AWS_ACCESS_KEY_ID not set"): never a secret. Called with the
     * chain's lock held, so one call at a time per provider; it may block
     * (network sources), and expiration tells the chain when to call again.
     */
    int (*resolve)(struct creds_provider *p, struct creds *out, char *why, size_t whylen);
    void (*free)(struct creds_provider *p);
};

/* The constructors take the chain's profile name (never NULL) and return
 * NULL on ENOMEM. */
struct creds_provider *creds_provider_env_new(const char *profile);
struct creds_provider *creds_provider_profile_new(const char *profile);

/* Fill c with copies of the strings (token may be NULL); provider is cut
 * to fit. 0, or -1 on ENOMEM with c left empty. */
int creds_set(struct creds *c, const char *access_key_id, const char *secret_access_key,
              const char *session_token, time_t expiration, const char *provider);

/* "2024-05-01T12:00:00Z", with optional fractional seconds and a "+hh:mm"
 * or "-hhmm" offset instead of Z (no zone: UTC), the forms AWS services,
 * IMDS and AWS_CREDENTIAL_EXPIRATION use. 0, or -1 if s is not one. */
int creds_parse_time(const char *s, time_t *out);

#endif
