/*
 * creds_source.c - what the credential sources share: reading variables,
 * the JSON credential documents of the container endpoint, IMDS and
 * credential_process, token files, and the HTTP client of the network
 * sources. Not a source itself, and not the chain (creds.c).
 */
#include "awsconfig.h"
#include "creds.h"
#include "ascii.h"
#include "creds_provider.h"
#include "http.h"

#include <jansson.h>
#include <openssl/crypto.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
creds_env_true(const char *name)
{
    const char *v = awsconfig_env(name);
    return v != NULL && ascii_strcasecmp(v, "true") == 0;
}

/* A member that must be a non-empty string, or NULL. */
static const char *
member(json_t *doc, const char *name)
{
    json_t *v = json_object_get(doc, name);
    const char *s = json_is_string(v) ? json_string_value(v) : NULL;
    return s != NULL && *s != '\0' ? s : NULL;
}

/* Overwrite a parsed string's bytes: jansson frees without wiping. */
static void
wipe_member(json_t *doc, const char *name)
{
    json_t *v = json_object_get(doc, name);
    if (json_is_string(v)) {
        OPENSSL_cleanse((char *) json_string_value(v), json_string_length(v));
    }
}

/* The checks besides the two keys: 1, or 0 with why. */
static int
check_form(json_t *doc, unsigned flags, char *why, size_t whylen)
{
    json_t *version = json_object_get(doc, "Version");
    const char *code = member(doc, "Code");

    if ((flags & CREDS_JSON_VERSION_1) &&
        (!json_is_integer(version) || json_integer_value(version) != 1)) {
        snprintf(why, whylen, "the JSON has no \"Version\": 1");
        return 0;
    }
    if ((flags & CREDS_JSON_SUCCESS) && code != NULL && strcmp(code, "Success") != 0) {
        snprintf(why, whylen, "the credentials' Code is \"%.40s\", not Success", code);
        return 0;
    }
    return 1;
}

/* The document's parts into *out: 1, 0 with why, -1 on ENOMEM. */
static int
doc_creds(json_t *doc, const char *token_key, unsigned flags, const char *provider,
          struct creds *out, char *why, size_t whylen)
{
    const char *akid = member(doc, "AccessKeyId");
    const char *secret = member(doc, "SecretAccessKey");
    const char *token = token_key != NULL ? member(doc, token_key) : NULL;
    const char *expiry = member(doc, "Expiration");
    time_t expiration = 0;

    if (!check_form(doc, flags, why, whylen)) {
        return 0;
    }
    if (akid == NULL || secret == NULL) {
        snprintf(why, whylen, "the JSON has no %s",
                 akid == NULL ? "AccessKeyId" : "SecretAccessKey");
        return 0;
    }
    if (expiry == NULL && (flags & CREDS_JSON_EXPIRATION)) {
        snprintf(why, whylen, "the JSON has no Expiration");
        return 0;
    }
    if (expiry != NULL && creds_parse_time(expiry, &expiration) != 0) {
        snprintf(why, whylen, "Expiration \"%.40s\" is not an ISO 8601 time", expiry);
        return 0;
    }
    if (creds_set(out, akid, secret, token, expiration, provider) != 0) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    return 1;
}

int
creds_from_json(const char *text, size_t len, const char *token_key, unsigned flags,
                const char *provider, struct creds *out, char *why, size_t whylen)
{
    json_error_t jerr;
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    int rc;

    memset(out, 0, sizeof(*out));
    if (!json_is_object(doc)) {
        /* jerr.text can quote the input: only say where. */
        if (doc == NULL) {
            snprintf(why, whylen, "the answer is not JSON (error at line %d, column %d)",
                     jerr.line, jerr.column);
        } else {
            snprintf(why, whylen, "the answer is not a JSON object");
        }
        json_decref(doc);
        return 0;
    }
    rc = doc_creds(doc, token_key, flags, provider, out, why, whylen);
    wipe_member(doc, "SecretAccessKey");
    if (token_key != NULL) {
        wipe_member(doc, token_key);
    }
    json_decref(doc);
    return rc;
}

char *
creds_read_token_file(const char *path, size_t max)
{
    size_t len = 0;
    char *text = awsconfig_read_file(path, max, &len);

    while (text != NULL && len > 0 && strchr(" \t\r\n", text[len - 1]) != NULL) {
        text[--len] = '\0';
    }
    return text;
}

struct http_client *
creds_http(struct http_client **slot)
{
    if (*slot == NULL) {
        *slot = http_client_new(NULL);
    }
    return *slot;
}
