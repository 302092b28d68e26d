/*
 * envcheck.h - what the environment and the AWS profile add to a
 * configuration that leaves them out, checked by twiced -t and before the
 * start: the region (AWS_REGION, AWS_DEFAULT_REGION, the profile's) and the
 * SQS and S3 endpoints (AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_S3,
 * AWS_ENDPOINT_URL; S3's when a queue keeps payloads there), and STS's
 * (AWS_ENDPOINT_URL_STS, when set). A bad value would otherwise stop
 * every worker at its first request, as a signing or endpoint error. Not the configuration's own
 * settings (config_check.c), not whether AWS answers (preflight.c).
 */
#ifndef TWICE_ENVCHECK_H
#define TWICE_ENVCHECK_H

#include <stddef.h>

struct config;
struct diag;

/* The number of problems added to d, each naming where the value came from
 * ("AWS_REGION=us east 1: not a region name (...)"). A region or endpoint
 * that is not set at all is not one: the configuration may not need it. */
int envcheck_aws(const struct config *c, struct diag *d);

/* tracing.exporter otlp completed from the OTEL_* environment as every worker
 * will (tracecfg_resolve): a bad OTEL_EXPORTER_OTLP_*ENDPOINT, header list or
 * OTEL_RESOURCE_ATTRIBUTES turns tracing off in each worker at its start. A
 * warning, not a problem: tracing never stops jobs, so neither twiced -t nor
 * the start fail for it, but they say it. 1 with the warning in why (raw
 * text: the caller escapes it as its output needs), else 0; a header's
 * value is never in it. */
int envcheck_tracing(const struct config *c, char *why, size_t cap);

#endif
