/*
 * regionname.h - the shape of an AWS region's name, pure text: one rule for
 * aws.region in the configuration and for a region read from the
 * environment or an AWS profile, so that a bad one is refused where it is
 * read instead of failing as an opaque signing or endpoint error. Not where
 * a region comes from (aws/awsregion.c).
 */
#ifndef TWICE_REGIONNAME_H
#define TWICE_REGIONNAME_H

/* What regionname_ok() wants, for a message. */
#define REGIONNAME_RULE "lowercase letters, digits and '-', like us-east-1"

/* 1 when r has the shape of a region name (us-east-1, us-gov-west-1,
 * cn-north-1): 1-63 of a-z 0-9 '-'. No stricter: with an emulator's
 * endpoint, "local" or "elasticmq" sign as well. */
int regionname_ok(const char *r);

#endif
