/* sr_template.h - the API of sr_template.c: template expansion. */
#ifndef SR_TEMPLATE_H
#define SR_TEMPLATE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>


/* A bounded text buffer for expansions. */
struct sr_buf {
	char *s;
	size_t len, cap;
};
/* Where an expanded value goes, and so how it is escaped. */
enum { SR_CTX_RAW, SR_CTX_URL, SR_CTX_JSON, SR_CTX_FORM, SR_CTX_HEADER };
/* Give the value of placeholder name (NULL: unknown); *raw = 1 to insert it
 * unescaped (a base URL). */
typedef const char *sr_lookup_fn(void *arg, const char *name, int *raw);
/* Expand {name} placeholders of tmpl into out, each value escaped for ctx.
 * Anything else, JSON braces included, is copied as it is. -1 with err. */
int sr_expand(const char *tmpl, int ctx, sr_lookup_fn *lookup, void *arg, struct sr_buf *out,
    char *err, size_t errlen);

#endif
