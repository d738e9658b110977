/*
 * What the uiwarp tools share about uiwarp itself: the setup of an end
 * (device, PD, CQ, QP, registered buffer), of a connection between two
 * ends through the connection manager, and the waits for events and
 * completions.  The rest they share is in tool_util.h.
 *
 * Every function here either succeeds or ends the program with a message
 * that names the tool, the call that failed and uiw_last_error().
 */
#ifndef UIWARP_TOOL_CONN_H
#define UIWARP_TOOL_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uiwarp/uiwarp.h>
#include <uiwarp/cm.h>

#include "tool_util.h"

#define UIW_TOOL_TIMEOUT_MS 30000
#define UIW_TOOL_ACC_RW (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | \
			 UIW_ACCESS_REMOTE_READ)
#define UIW_TOOL_ACC_ALL (UIW_TOOL_ACC_RW | UIW_ACCESS_REMOTE_ATOMIC)

/* Waits for an event of type t on ch (a TIMEWAIT_EXIT before it is
 * skipped); any other event, or none within UIW_TOOL_TIMEOUT_MS, dies. */
void uiw_tool_wait_event(struct uiw_cm_channel *ch, enum uiw_cm_event_type t,
			 struct uiw_cm_event *out);

/* One side of a connection. */
struct uiw_tool_end {
	const char *name;
	struct uiw_device *dev;
	struct uiw_pd *pd;
	struct uiw_cq *cq;
	struct uiw_qp *qp;
	struct uiw_cm_channel *ch;   /* the initiator's channel */
	struct uiw_cm_id *id;
	uint8_t *buf;
	size_t len;
	struct uiw_mr *mr;
	struct uiw_qp_attr attr;     /* queried once connected */
	int own_dev, own_pd, own_cq;
};

/* How to make an end; a zeroed struct is not valid (cap must be set). */
struct uiw_tool_end_cfg {
	struct uiw_device *dev;      /* NULL: a device of its own */
	struct uiw_pd *pd;           /* NULL: a PD of its own */
	struct uiw_cq *cq;           /* NULL: a CQ of its own of cqe entries */
	int cqe;
	struct uiw_qp_cap cap;
	int sq_sig_all;
	size_t buf_len;              /* registered buffer, 0: none */
	unsigned access;             /* its access rights */
	int channel;                 /* make a CM channel for connecting */
};

void uiw_tool_end_init(struct uiw_tool_end *e, const char *name,
		       const struct uiw_tool_end_cfg *cfg);
/* Destroys the id, QP, MR, and the CQ, PD, channel and device the end
 * made itself; frees the buffer. */
void uiw_tool_end_free(struct uiw_tool_end *e);

/* A listener of the connection manager. */
struct uiw_tool_listener {
	struct uiw_cm_channel *ch;
	struct uiw_cm_id *id;
	uint16_t port;               /* the port it listens on */
	int family;                  /* AF_INET or AF_INET6 */
	enum uiw_llp_kind llp;       /* connections to it use the same */
	uint16_t udp_port;           /* SCTP over UDP (RFC 6951) */
};

/* Listens on the loopback address of family (AF_INET: 127.0.0.1,
 * AF_INET6: ::1) at port (0: any free port). */
void uiw_tool_listen(struct uiw_tool_listener *l, struct uiw_device *dev,
		     int family, unsigned port, int backlog);
/* The same over an LLP (uiw_listen_param): udp_port for SCTP over UDP,
 * 0: a free one (l->udp_port says which).  uiw_tool_connect_pair then
 * connects over the same. */
void uiw_tool_listen_llp(struct uiw_tool_listener *l, struct uiw_device *dev,
			 int family, unsigned port, int backlog,
			 enum uiw_llp_kind llp, uint16_t udp_port);
void uiw_tool_listen_close(struct uiw_tool_listener *l);

/* Connects c (initiator; a channel is made for it if it has none) to s
 * (responder) through l with the same parameters on both sides, waits
 * until both are established, and queries both QPs, which must be in
 * RTS.  p may be NULL (the defaults). */
void uiw_tool_connect_pair(struct uiw_tool_end *c, struct uiw_tool_end *s,
			   struct uiw_tool_listener *l,
			   const struct uiw_conn_param *p);
/* Graceful close from c; waits for DISCONNECTED on both sides. */
void uiw_tool_disconnect_pair(struct uiw_tool_end *c,
			      struct uiw_tool_listener *l);

/* Takes up to n completions from cq, sleeping on the CQ's fd (and on
 * extra_fd when it is >= 0) while there are none.  Returns the count, or
 * 0 when extra_fd became readable first.  No completion within
 * UIW_TOOL_TIMEOUT_MS dies, naming who. */
int uiw_tool_get_wcs(struct uiw_cq *cq, struct uiw_wc *wc, int n,
		     int extra_fd, const char *who);

/* The same, spinning on uiw_cq_poll (yielding the CPU after each empty
 * poll: on a machine with few CPUs the progress threads must run); with
 * extra_fd >= 0 it returns 0 now and then, for the caller to look at it. */
int uiw_tool_spin_wcs(struct uiw_cq *cq, struct uiw_wc *wc, int n,
		      int extra_fd, const char *who);
/* One completion of e's CQ. */
struct uiw_wc uiw_tool_wait_wc(struct uiw_tool_end *e);
/* One completion of e's CQ, which must be a success of wr_id id and
 * opcode op; anything else dies. */
struct uiw_wc uiw_tool_expect_wc(struct uiw_tool_end *e, uint64_t id,
				 enum uiw_wc_opcode op);

/* uiw_tool_connect_pair with these MPA CRC and marker options and the
 * defaults for the rest. */
void uiw_tool_connect_opts(struct uiw_tool_end *c, struct uiw_tool_end *s,
			   struct uiw_tool_listener *l, enum uiw_opt crc,
			   enum uiw_opt markers);

/* One receive of len octets at e->buf + off (len 0: no SGE). */
void uiw_tool_post_recv(struct uiw_tool_end *e, uint64_t id, size_t off,
			size_t len);

#endif
