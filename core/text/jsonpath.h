/*
 * jsonpath.h - reading fields of a parsed message body by dotted path, and
 * the two texts of a scalar: the one a key is made of and the one a plugin
 * is handed.
 *
 * "a.b" walks objects; a component of digits indexes an array ("items.0.id").
 * Used by key templates, routing and the plugin API. Pure functions over a
 * struct jsondoc; nothing here allocates but the output buffer.
 */
#ifndef TWICE_JSONPATH_H
#define TWICE_JSONPATH_H

#include "jsondoc.h"

struct buf;

/* The value at path ("" is the root), or NULL when any step is missing or
 * of the wrong kind. An object member named more than once: the last one
 * wins. Borrowed from d. */
const struct jsondoc_value *jsonpath_get(const struct jsondoc *d, const char *path);

/*
 * Append the text a key is made of: a string as is, true/false, and a
 * number as keys have always spelt it (their texts are stored: they must
 * never change): an integer that fits 64 bits in decimal ("-0" is "0"), a
 * real in the shortest form that reads back as the same double ("1.50" is
 * "1.5", "1e2" is "1e+02"), and a number beyond both (an integer past 64
 * bits, a real past the double range) as written. Returns 0, or -1 (nothing
 * appended) for null, objects and arrays.
 */
int jsonpath_key_text(const struct jsondoc_value *v, struct buf *out);

/* Append the text a plugin is handed (api->field): as jsonpath_key_text,
 * but a number exactly as the producer wrote it ("19.99", "1.50", "1e2"). */
int jsonpath_field_text(const struct jsondoc_value *v, struct buf *out);

/* The room the host gives a body's parse error (see jsondoc.h). */
#define JSONPATH_BODY_ERROR_LEN JSONDOC_ERROR_LEN

#endif
