/* sr_valid.h - the API of sr_valid.c. */
#ifndef SR_VALID_H
#define SR_VALID_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

/* Ids become parts of Redis keys and URLs: [A-Za-z0-9_.-]{1,64}. */
int sr_valid_id(const char *s);
/* Scenes and their priority class. */
enum sr_prio { SR_PRIO_HIGH = 0, SR_PRIO_NORMAL = 1, SR_PRIO_BULK = 2 };
/* Returns the scene's class, or -1 for an unknown scene. */
int sr_scene_prio(const char *scene);
/* Every scene, space-separated, wrapped as sr_wrap_word does from column
 * col (a static buffer): for a usage text. */
const char *sr_scene_list(int col, const char *indent);
/* Check that every key of obj is in the NULL-terminated list allowed; on
 * failure returns the offending key. */
const char *sr_unknown_key(json_t *obj, const char *const *allowed);

#endif
