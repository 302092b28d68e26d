/*
 * hash.h - FNV-1a, the one string hash of the daemon's own tables and keys:
 * short, fast on short strings, no dependency. Not for anything an attacker
 * must not steer (it is not keyed).
 */
#ifndef TWICE_HASH_H
#define TWICE_HASH_H

#include <stdint.h>

/* The FNV-1a 64 offset basis: the h to start from. */
#define HASH_FNV1A_INIT UINT64_C(14695981039346656037)

/* h continued over the bytes of s (up to its NUL): hash_fnv1a(HASH_FNV1A_INIT, s)
 * is s's FNV-1a 64; passing the result on hashes a concatenation. */
uint64_t hash_fnv1a(uint64_t h, const char *s);

#endif
