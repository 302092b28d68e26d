/*
 * mailaddr.c - the shape of an e-mail address for SMTP's MAIL FROM and RCPT
 * TO (mailaddr.h). Not for display names, lists or RFC 5322 headers.
 */
#include "mailaddr.h"

#include <string.h>

#define LOCAL_MAX 64  /* RFC 5321 4.5.3.1.1 */
#define ADDR_MAX  254 /* a path of 256 with its <> */

/* RFC 5322's atext: what an unquoted local part is made of, with dots. */
static int
atext(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           strchr("!#$%&'*+-/=?^_`{|}~", c) != NULL;
}

/* Dot-separated runs of ok characters, none empty: "a.b", not ".a", "a..b". */
static int
dotted(const char *s, size_t n, int (*ok)(unsigned char))
{
    if (n == 0 || s[0] == '.' || s[n - 1] == '.') {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '.' ? s[i + 1] == '.' : !ok((unsigned char) s[i])) {
            return 0;
        }
    }
    return 1;
}

static int
domain_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

/* The characters alone: what no part of an address may hold. */
static const char *
chars_problem(const char *addr)
{
    for (const unsigned char *p = (const unsigned char *) addr; *p != '\0'; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            return "a control character (a CR or LF would end the SMTP command)";
        }
        if (*p >= 0x80) {
            return "not ASCII (write an internationalized domain in its xn-- form)";
        }
    }
    if (strpbrk(addr, "<>") != NULL) {
        return "an address only, without a name or <>: like alerts@example.com";
    }
    if (strpbrk(addr, ",; ") != NULL) {
        return "one address per string: several recipients are a list, "
               "to = [\"a@example.com\", \"b@example.com\"]";
    }
    return NULL;
}

const char *
mailaddr_problem(const char *addr)
{
    const char *why = chars_problem(addr);
    if (why != NULL) {
        return why;
    }
    const char *at = strrchr(addr, '@');
    if (at == NULL) {
        return "no '@': an address is local-part@domain";
    }
    if (strlen(addr) > ADDR_MAX) {
        return "longer than 254 bytes";
    }
    size_t local = (size_t) (at - addr), dom = strlen(at + 1);
    if (memchr(addr, '"', local) != NULL || memchr(addr, '@', local) != NULL) {
        return "a quoted local part, which twice does not send";
    }
    if (local > LOCAL_MAX || !dotted(addr, local, atext)) {
        return "the part before '@' must be 1-64 of letters, digits and !#$%&'*+-/=?^_`{|}~, "
               "dots between them";
    }
    if (dom > 2 && at[1] == '[' && at[dom] == ']') {
        return NULL; /* an address literal: the server judges it */
    }
    if (!dotted(at + 1, dom, domain_char)) {
        return "the domain after '@' must be letters, digits and '-', dots between them";
    }
    return NULL;
}
