/* sr_csv.h - the API of sr_csv.c. */
#ifndef SR_CSV_H
#define SR_CSV_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

struct sr_csv;
struct sr_csv *sr_csv_new(int fd);
void sr_csv_free(struct sr_csv *c);
/* After EOF: 0, or an exit status after saying the input could not be read. */
int sr_csv_failed(const struct sr_csv *c);
/* 1 if the next row can be started without waiting (input buffered or
 * readable now, or at its end): a filter answers what it has otherwise. */
int sr_csv_ready(struct sr_csv *c);
/* Next data row as a new JSON object of strings keyed by the header (empty
 * cells left out); *line is the physical line the row starts on.
 * Returns 1 row, 0 end of input, -1 a bad row (err set; go on), -2 a bad
 * header (err set; stop). */
int sr_csv_next(struct sr_csv *c, json_t **row, long *line, char *err, size_t errlen);
/* Turn the string members named in names (NULL-terminated) into integers;
 * -1 with err set if one is not a non-negative integer. */
int sr_json_integers(json_t *obj, const char *const *names, char *err, size_t errlen);
/* Turn the string members named in names into flags: "0"/"1" into
 * integers, true/false/t/f (any case) into booleans; -1 with err set if one
 * is none of them. */
int sr_json_flags(json_t *obj, const char *const *names, char *err, size_t errlen);

#endif
