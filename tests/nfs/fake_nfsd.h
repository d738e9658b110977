/*
 * A small NFS version 3 and MOUNT version 3 server for uiwarp-nfs's
 * tests: rpcgen's dispatch functions (nfs3_prot_svc.c, mount3_svc.c)
 * over RPC-over-RDMA (uiw_rpcrdma_svc_create, RFC 8267's bindings) and
 * TCP (NFS and MOUNT on one port), served by a thread of its own, with
 * an in-memory tree.  The export is "/export".
 */
#ifndef UIW_FAKE_NFSD_H
#define UIW_FAKE_NFSD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fake_ports {
	unsigned rdma, tcp;     /* NFS over RDMA; NFS and MOUNT over TCP */
};

/* Starts the server thread; false with a message on stderr. */
bool fake_start(struct fake_ports *p);
void fake_stop(void);

/* The tree back to its start:
 *   /hello.txt   "hello, world\n"
 *   /big.bin     big_size octets of a pattern (seed 7)
 *   /dir/        a, b, c, d, e (empty files), sub/ (with x)
 *   /link        -> hello.txt
 *   /empty/      (no entries)
 * and every control below cleared. */
void fake_reset(size_t big_size);

/* A node's data by path from the root ("dir/a"); NULL when none.  The
 * caller frees it (a copy taken under the server's lock). */
uint8_t *fake_data(const char *path, size_t *len, int *type);
char *fake_target(const char *path);

/* Controls and counts (under the server's lock). */
struct fake_counts {
	unsigned reads, writes, unstable_writes, sync_writes, commits;
	unsigned mounts, umounts, readdirplus;
	int last_flavor;        /* AUTH_NONE, AUTH_SYS ... of the last call */
	unsigned last_uid, last_gid;
};
void fake_counts(struct fake_counts *c);
/* The next n READs are answered NFS3ERR_JUKEBOX. */
void fake_jukebox_reads(unsigned n);
/* READs after the first n are not answered (n < 0: all are). */
void fake_silent_reads_after(int n);
/* The write verifier changes once, after the n-th WRITE (0: never). */
void fake_change_verf_after(unsigned n);
/* At the n-th READ, signal sig to pid (the tool), and go on serving. */
void fake_signal_at_read(unsigned n, pid_t pid, int sig);
/* Readable (an eventfd) each time a READ arrives. */
int fake_read_fd(void);

#endif
