/*
 * jsonwrite.h - writing JSON text straight into a struct buf, without a
 * tree: yajl's generator (Debian's libyajl), which escapes strings and
 * checks that they are UTF-8. For requests on hot paths (SQS receives and
 * batches); elsewhere jansson's trees are fine.
 */
#ifndef TWICE_JSONWRITE_H
#define TWICE_JSONWRITE_H

#include <stddef.h>

struct buf;

struct jsonwrite {
    void *gen;       /* yajl's generator */
    struct buf *out; /* borrowed */
    int failed;      /* a string was not UTF-8, or memory ran out */
};

/* Start writing into out (appended). 0, or -1 when out of memory. */
int jsonwrite_begin(struct jsonwrite *w, struct buf *out);
/* Finish: 0 when all went well, else -1 (out then holds partial text). */
int jsonwrite_end(struct jsonwrite *w);

void jsonwrite_open(struct jsonwrite *w);      /* { */
void jsonwrite_close(struct jsonwrite *w);     /* } */
void jsonwrite_array(struct jsonwrite *w);     /* [ */
void jsonwrite_end_array(struct jsonwrite *w); /* ] */
/* A string (a member name, too); NULL fails the writer. */
void jsonwrite_string(struct jsonwrite *w, const char *s);
void jsonwrite_stringn(struct jsonwrite *w, const char *s, size_t n);
void jsonwrite_int(struct jsonwrite *w, long long v);

/* "name": value in the object being written. */
void jsonwrite_member_string(struct jsonwrite *w, const char *name, const char *value);
void jsonwrite_member_int(struct jsonwrite *w, const char *name, long long value);

#endif
