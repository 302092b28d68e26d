/*
 * s3name.h - S3's rule for a bucket name, pure text: the S3 client checks a
 * payload pointer's bucket with it, and the configuration a queue's
 * payload_bucket, so that a name S3 would refuse is caught by twiced -t.
 * Not the client itself (s3/s3.h).
 */
#ifndef TWICE_S3NAME_H
#define TWICE_S3NAME_H

/* S3's rules for a bucket name: 3-63 of a-z 0-9 . -, starting and ending
 * with a letter or digit, no "..", not an IPv4 address. 1 when it is one. */
int s3_valid_bucket(const char *name);

#endif
