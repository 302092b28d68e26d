/*
 * utf8.h - strict UTF-8 validation (no overlongs, no surrogates, nothing
 * above U+10FFFF), shared by every place that must tell text from bytes:
 * log and terminal escaping, and keys before they reach PostgreSQL.
 */
#ifndef TWICE_UTF8_H
#define TWICE_UTF8_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence starting at s (n >= 1 bytes left),
 * or 0 when it is not one. */
size_t utf8_seq_len(const unsigned char *s, size_t n);

/* 1 when all n bytes of s are valid UTF-8, else 0. */
int utf8_valid(const char *s, size_t n);

/* Where to cut s (at least n + 1 bytes) to keep at most n bytes without
 * splitting a character: n, or less when s[n], the first byte left out,
 * continues a character. */
size_t utf8_cut(const char *s, size_t n);

/* Text formatted into s (cap bytes) that needed n bytes (an snprintf's
 * answer): when it was cut, cut it again between characters and end it
 * with "...", so it neither ends mid-character nor reads as whole. */
void utf8_mark_cut(char *s, size_t cap, int n);

#endif
