/* sr_profile_check.h - the API of sr_profile_check.c: the checks that need a whole profile. */
#ifndef SR_PROFILE_CHECK_H
#define SR_PROFILE_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_profile.h"

/* Every check of ps->p once it is read whole; -1 with ps->err. Fills in
 * what is left to a default (a request body's type). */
int sr_profile_check(struct sr_parse *ps);
/* Every {name} of tmpl is a placeholder the profile knows; -1 with ps->err
 * naming key (at the line the file set it). */
int sr_profile_check_names(struct sr_parse *ps, const char *key, const char *tmpl);
/* Does tmpl name placeholder {that}, itself or through what it names
 * ({base}, {reqid}, a set.NAME)? */
int sr_profile_names(const struct sr_profile *p, const char *tmpl, const char *that, int depth);
/* The line of a key this file set (0: it came from a base profile). */
int sr_parse_line_of(const struct sr_parse *ps, const char *key);

#endif
