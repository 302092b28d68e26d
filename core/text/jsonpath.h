/*
 * jsonpath.h - reading fields of a message body by dotted path.
 *
 * "a.b" walks objects; a component of digits indexes an array ("items.0.id").
 * Used by key templates, routing and the plugin API. Pure functions over
 * jansson values; nothing here allocates but the output buffer.
 */
#ifndef TWICE_JSONPATH_H
#define TWICE_JSONPATH_H

#include <jansson.h>

struct buf;

/* The value at path ("" is the root), or NULL when any step is missing or
 * of the wrong kind. Borrowed from root. */
json_t *jsonpath_get(const json_t *root, const char *path);

/*
 * Append a scalar's text to out: a string as is, an integer in decimal, a
 * real in the shortest form that reads back the same, true/false. Returns 0,
 * or -1 (nothing appended) for null, objects and arrays.
 */
int jsonpath_scalar_text(const json_t *v, struct buf *out);

/*
 * Parse a message body the one way twice does everywhere: strict UTF-8,
 * no duplicate object keys, no NUL in strings, depth limited by jansson;
 * a bare scalar ("42") is accepted as a body without fields.
 * Returns a new reference, or NULL with err set ("line 1 column 7: ...").
 */
json_t *jsonpath_parse_body(const char *body, size_t len, char *err, size_t errlen);

/* The room the host gives that err (a job's body_error): a longer reason is
 * cut there, in the daemon and in the SDK's mock host alike. */
#define JSONPATH_BODY_ERROR_LEN 160

#endif
