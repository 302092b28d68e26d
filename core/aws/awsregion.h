/*
 * awsregion.h - where the AWS region comes from when the configuration does
 * not say (AWS_REGION, AWS_DEFAULT_REGION, the profile's region in the
 * shared config file), checked where it is read with the configuration's
 * rule (text/regionname.h): a bad one is named with its source instead of
 * failing later as a signing or endpoint error. Nothing here logs.
 */
#ifndef TWICE_AWSREGION_H
#define TWICE_AWSREGION_H

#include <stddef.h>

/* AWS_REGION, else AWS_DEFAULT_REGION (set and not empty), else NULL; *name
 * gets the variable's name. Borrowed from the environment; not checked. */
const char *awsregion_env(const char **name);

/* Whether region (from src: "AWS_REGION", "~/.aws/config, [profile p]")
 * has a region's shape: 0, or -1 with why saying
 * "SRC=VALUE: not a region name (RULE)". */
int awsregion_check(const char *src, const char *region, char *why, size_t whylen);

/*
 * The region when the configuration sets none: the environment's, else the
 * region of profile's section (profile NULL: AWS_PROFILE, else "default")
 * in the shared config file. 1 with *out (the caller frees it); 0 with *out
 * NULL when none is set; -1 with why when the one found is not a region
 * name (naming the variable, or the file and section) or the file cannot be
 * read.
 */
int awsregion_resolve(const char *profile, char **out, char *why, size_t whylen);

#endif
