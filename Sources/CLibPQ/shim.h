// Debian puts libpq's headers in /usr/include/postgresql, others in /usr/include.
#if __has_include(<postgresql/libpq-fe.h>)
#include <postgresql/libpq-fe.h>
#else
#include <libpq-fe.h>
#endif
