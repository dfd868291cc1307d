/* sr_rule.h - the API of sr_rule.c: a profile's rules and their outcomes. */
#ifndef SR_RULE_H
#define SR_RULE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_profile.h"

const char *sr_verdict_name(int verdict);
/* A rule outcome's name (ok, already, ...) as its verdict; -1 if none. */
int sr_verdict_parse(const char *name);
/* "http=200,409 code=OK msg~text body~text => outcome", or "* => outcome",
 * appended to *rules; -1 with ps->err. */
int sr_rule_parse(struct sr_parse *ps, char *v, struct sr_rule **rules, int *nrules);
void sr_rules_free(struct sr_rule *rules, int n);
/* Whether rule r matches an answer: its status, business code (has_code:
 * one was read), message and body. */
int sr_rule_matches(const struct sr_rule *r, long http, const char *code, int has_code,
    const char *msg, const char *body);

#endif
