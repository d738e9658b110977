/*
 * What a backend of src/llp/sctp.h provides: the functions of sctp.h
 * behind one table, so that the usrsctp backend (sctp_usr.c) and the
 * kernel's (sctp_kern.c) live in translation units of their own (their
 * headers clash: usrsctp.h and <linux/sctp.h> give the same names other
 * values).  sctp.c dispatches.  Each backend's stack, listener and
 * association structures begin with the common part below.
 */
#ifndef UIW_LLP_SCTP_BACKEND_H
#define UIW_LLP_SCTP_BACKEND_H

#include "sctp.h"

struct uiw_sctp_ops {
	const char *name;
	/* Creates the stack (its progress thread included); cfg filled
	 * with defaults.  -EPROTONOSUPPORT with a logged reason when the
	 * backend cannot run here. */
	int (*create)(const struct uiw_sctp_config *cfg,
		      struct uiw_sctp_stack **out);
	/* Stops and frees it (no listener or association left). */
	void (*destroy)(struct uiw_sctp_stack *s);
	int (*listen)(struct uiw_sctp_stack *s, const struct sockaddr *sa,
		      socklen_t salen, int backlog,
		      const struct uiw_sctp_up *up, void *ctx,
		      struct uiw_sctp_lsn **out);
	void (*lsn_addr)(const struct uiw_sctp_lsn *l,
			 struct sockaddr_storage *ss);
	void (*unlisten)(struct uiw_sctp_lsn *l);
	/* Optional: uiw_sctp_assoc_bind has just given a its own upcalls
	 * (an accepted association is no longer its listener's). */
	void (*bind)(struct uiw_sctp_assoc *a);
	int (*connect)(struct uiw_sctp_stack *s, const struct sockaddr *peer,
		       socklen_t peerlen, const struct sockaddr *local,
		       socklen_t locallen, uint16_t udp_port,
		       const struct uiw_sctp_up *up, void *ctx,
		       struct uiw_sctp_assoc **out);
	int (*send)(struct uiw_sctp_assoc *a, uint16_t sid, uint32_t ppid,
		    const struct iovec *iov, int iovcnt);
	int (*unacked)(struct uiw_sctp_assoc *a);
	void (*watch_dry)(struct uiw_sctp_assoc *a);
	void (*shutdown)(struct uiw_sctp_assoc *a);
	void (*abort)(struct uiw_sctp_assoc *a);
	void (*buf_free)(struct uiw_sctp_stack *s, void *buf);
};

/* The first member of every backend's stack structure. */
struct uiw_sctp_stack_base {
	const struct uiw_sctp_ops *ops;
	struct uiw_rt *rt;           /* the stack's progress thread */
	struct uiw_sctp_config cfg;  /* defaults filled */
	enum uiw_sctp_kind kind;
	int refs;                    /* sctp.c's, under its lock */
	unsigned users;              /* listeners and associations alive
					(the backend's count, its thread) */
};
/* The first member of every backend's association structure. */
struct uiw_sctp_assoc_base {
	struct uiw_sctp_stack *stack;
	const struct uiw_sctp_up *up;
	void *ctx;
	struct uiw_sctp_info info;
};
struct uiw_sctp_lsn_base {
	struct uiw_sctp_stack *stack;
};

/* Tests put an in-memory carrier in place of a backend; NULL restores
 * the real one.  Only while no stack of that kind exists (a call made
 * while one does changes nothing).  Any thread. */
void uiw_sctp_set_backend(enum uiw_sctp_kind kind,
			  const struct uiw_sctp_ops *ops);

/* A backend's destroy calls this first, on the stack's thread, in the
 * same turn in which it then frees what is left without upcalls: the
 * layer above lets go (uiw_sctp_set_quiesce), and nothing the backend
 * had queued reaches it afterwards. */
void uiw_sctp_quiesce_run(struct uiw_sctp_stack *s);

extern const struct uiw_sctp_ops uiw_sctp_usr_ops;
extern const struct uiw_sctp_ops uiw_sctp_kern_ops;

#endif
