// Linux's epoll and eventfd, which the Glibc module does not expose: the
// PostgreSQL store's event loop (PGEventLoop) waits on its sockets with them.
#include <sys/epoll.h>
#include <sys/eventfd.h>
