/* Runtime: one progress thread per device with an epoll set, and timers. */
#ifndef UIW_RT_RT_H
#define UIW_RT_RT_H

struct uiw_rt;

/* Created by uiw_device_open, destroyed by uiw_device_close. */
struct uiw_rt *uiw_rt_create(const char *name);
void uiw_rt_destroy(struct uiw_rt *rt);

#endif
