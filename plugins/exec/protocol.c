/*
 * protocol.c - the exec plugin's one line of JSON each way per job:
 *
 *   -> {"key":"...","body":"...","message_id":"...","attempt":1,
 *       "queue":"...","attributes":{"Name":"value"}}
 *   <- {"status":"done"|"retry"|"reject","error":"...","retry_after":N,
 *       "message_id":"..."}
 *
 * The body is the message body as a JSON string (parse it yourself when it
 * is JSON); attributes are the String and Number message attributes. In an
 * answer, error and retry_after are optional and members twice does not
 * know are ignored (room to grow); anything else is garbage. message_id is
 * optional too: a handler that echoes the request's names the job it
 * answers, so that a stray line of an earlier job is never taken as the
 * answer to this one (exchange.c). Not the transport (exchange.c).
 * twice-exec(7) documents it for handler authors.
 */
#include "exec.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The job's String and Number attributes as an object (empty without
 * ABI 1.1's attr_name). */
static json_t *
attributes(const twice_api *api, const twice_job *job)
{
    json_t *o = json_object();
    for (size_t i = 0; o != NULL && TWICE_API_HAS(api, attr_name); i++) {
        const char *name = api->attr_name(job, i), *value;
        if (name == NULL) {
            break;
        }
        if ((value = api->attr(job, name, NULL)) != NULL) {
            json_object_set_new(o, name, json_string(value));
        }
    }
    return o;
}

char *
exec_request(const twice_api *api, const twice_job *job, size_t *len, const char **why)
{
    size_t blen = 0;
    const char *body = api->body(job, &blen);
    json_t *b = json_stringn(body, blen);
    *why = "out of memory";
    if (b == NULL) {
        *why = "the body is not valid UTF-8";
        return NULL;
    }
    json_t *req = json_pack("{s:s,s:o,s:s,s:i,s:s?,s:o}", "key", api->key(job), "body", b,
                            "message_id", api->message_id(job), "attempt", api->attempt(job),
                            "queue", TWICE_API_HAS(api, queue) ? api->queue(job) : NULL,
                            "attributes", attributes(api, job));
    char *text = req != NULL ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (text == NULL) {
        return NULL;
    }
    size_t n = strlen(text);
    char *line = realloc(text, n + 2);
    if (line == NULL) {
        free(text);
        return NULL;
    }
    line[n] = '\n';
    line[n + 1] = '\0';
    *len = n + 1;
    return line;
}

void
exec_shown(const char *s, size_t len, char *out, size_t cap)
{
    size_t n = len < EXEC_SHOWN ? len : EXEC_SHOWN, o = 0;
    if (cap == 0) {
        return;
    }
    for (size_t i = 0; i < n && o + 4 < cap; i++) {
        unsigned char c = (unsigned char) s[i];
        out[o++] = c >= 0x20 && c < 0x7f ? (char) c : '?';
    }
    if (n < len && o + 4 < cap) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

/* A garbage answer: why, quoting its start. */
static int
garbage(const char *line, size_t len, const char *what, char *why, size_t cap)
{
    char shown[EXEC_SHOWN * 2];
    exec_shown(line, len, shown, sizeof(shown));
    snprintf(why, cap, "answered %s: '%s'", what, shown);
    return -1;
}

/* s (UTF-8) into out, cut between characters when it does not fit: the
 * error goes to the log and into twice-error, never half a character. */
static void
utf8_copy(char *out, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (n >= cap) {
        n = cap - 1;
        while (n > 0 && ((unsigned char) s[n] & 0xC0) == 0x80) {
            n--; /* s[n], the first byte left out, continues a character */
        }
    }
    memcpy(out, s, n);
    out[n] = '\0';
}

static int
parse_status(const json_t *s, twice_status *out)
{
    static const char *const names[] = {"done", "retry", "reject"};
    static const twice_status values[] = {TWICE_DONE, TWICE_RETRY, TWICE_REJECT};
    for (size_t i = 0; json_is_string(s) && i < 3; i++) {
        if (strcmp(json_string_value(s), names[i]) == 0) {
            *out = values[i];
            return 0;
        }
    }
    return -1;
}

int
exec_parse_answer(const char *line, size_t len, struct exec_answer *a, char *why, size_t cap)
{
    json_error_t je;
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    memset(a, 0, sizeof(*a));
    a->retry_after = -1;
    if (o == NULL) {
        /* JSON all the same, which the answer's rules refuse: say which */
        enum json_error_code code = json_error_code(&je);
        return garbage(line, len,
                       code == json_error_duplicate_key ? "JSON with a member named twice"
                       : code == json_error_null_character || code == json_error_null_byte_in_key
                           ? "JSON with \\u0000 in a string"
                       : code == json_error_invalid_utf8 ? "bytes that are not UTF-8"
                                                         : "something that is not JSON",
                       why, cap);
    }
    const json_t *err = json_object_get(o, "error"), *ra = json_object_get(o, "retry_after");
    const json_t *id = json_object_get(o, "message_id");
    const char *what = NULL;
    if (!json_is_object(o)) {
        what = "JSON that is not an object";
    } else if (parse_status(json_object_get(o, "status"), &a->status) != 0) {
        what = "without a status of \"done\", \"retry\" or \"reject\"";
    } else if (err != NULL && !json_is_string(err) && !json_is_null(err)) {
        what = "an error that is not a string";
    } else if (ra != NULL && !json_is_null(ra) &&
               (!json_is_number(ra) || json_number_value(ra) < 0)) {
        what = "a retry_after that is not a number of seconds";
    } else if (id != NULL && !json_is_null(id) &&
               (!json_is_string(id) || json_string_length(id) >= sizeof(a->message_id))) {
        what = "a message_id that is not a string of at most 255 bytes";
    }
    if (what != NULL) {
        json_decref(o);
        return garbage(line, len, what, why, cap);
    }
    if (json_is_string(err)) {
        utf8_copy(a->error, sizeof(a->error), json_string_value(err));
    }
    if (json_is_number(ra)) {
        double v = json_number_value(ra);
        a->retry_after = v > 43200 ? 43200 : (long) v;
    }
    if (json_is_string(id)) {
        a->echoed = 1;
        memcpy(a->message_id, json_string_value(id), json_string_length(id) + 1);
    }
    json_decref(o);
    return 0;
}

int
exec_answer_for(const struct exec_answer *a, const char *message_id)
{
    return !a->echoed || message_id == NULL || strcmp(a->message_id, message_id) == 0;
}
