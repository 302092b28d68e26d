/*
 * ascii.h - case and character classes of ASCII text whatever locale the
 * process has. A plugin may call setlocale(); under tr_TR.UTF-8 glibc's
 * tolower('I') is 'I' (the dotless i is not one byte) and
 * strcasecmp("ID", "id") != 0, and under a Latin-1 locale isalpha(0xE9) is
 * true. The host's protocol and configuration text (HTTP header names, AWS
 * configuration keys and values, URL schemes, attribute names, setting names)
 * is ASCII and compared the C locale's way, so it goes through here;
 * tests/check-locale.py refuses strcasecmp, strncasecmp, tolower, toupper
 * and the locale-dependent is*() classes elsewhere in core/ and sdk/mock/.
 * isdigit and isxdigit are left alone: C fixes them to the ASCII digits in
 * every locale.
 */
#ifndef TWICE_ASCII_H
#define TWICE_ASCII_H

#include <stddef.h>

/* c with 'A'..'Z' made 'a'..'z'; every other value as it is. */
static inline int
ascii_tolower(int c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* c with 'a'..'z' made 'A'..'Z'; every other value as it is. */
static inline int
ascii_toupper(int c)
{
    return c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c;
}

static inline int
ascii_islower(int c)
{
    return c >= 'a' && c <= 'z';
}

static inline int
ascii_isupper(int c)
{
    return c >= 'A' && c <= 'Z';
}

static inline int
ascii_isalpha(int c)
{
    return ascii_islower(c) || ascii_isupper(c);
}

static inline int
ascii_isalnum(int c)
{
    return ascii_isalpha(c) || (c >= '0' && c <= '9');
}

/* ' ', '\t', '\n', '\v', '\f', '\r': the C locale's isspace. */
static inline int
ascii_isspace(int c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* strcasecmp and strncasecmp with only 'A'..'Z' folded: bytes >= 0x80 compare
 * as themselves (unsigned), whatever the locale. */
int ascii_strcasecmp(const char *a, const char *b);
int ascii_strncasecmp(const char *a, const char *b, size_t n);

#endif
