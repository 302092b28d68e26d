/*
 * plural.h - the plural ending of a count in a message a person reads:
 * "1 queue", "2 queues", "0 keys".
 */
#ifndef TWICE_PLURAL_H
#define TWICE_PLURAL_H

static inline const char *
plural_s(long long n)
{
    return n == 1 ? "" : "s";
}

#endif
