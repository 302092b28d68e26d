/*
 * mailaddr.h - the shape of an e-mail address twice hands to an SMTP
 * server as MAIL FROM and RCPT TO (alerts.smtp.from and .to), pure text, so
 * that twiced -t refuses what the server would, and so that no CR or LF
 * ever reaches the SMTP session (libcurl sends an address as it is: a line
 * break in it is a second SMTP command). Not the mail itself (alert.c).
 */
#ifndef TWICE_MAILADDR_H
#define TWICE_MAILADDR_H

/* NULL when addr is a plain addr-spec, local@domain: a local part of
 * RFC 5321 atoms joined by dots (no quoted form), at most 64 bytes; a domain
 * of letters, digits, '-' and dots, or an address literal in [brackets];
 * at most 254 bytes in all; printable ASCII only. Else why not, a static
 * string that does not quote addr. */
const char *mailaddr_problem(const char *addr);

#endif
