# The nginx every benchmark compares Larder with, in one place: static GET
# and WebDAV PUT under /store/ (no fsync), sendfile on, two workers, every
# path inside $1. Sourced by bench/*.sh and Benchmarks/run.sh.
#
#   start_nginx WORK PORT   # files under WORK/nginx/root; pid in WORK/nginx.pid
start_nginx() {
  local work=$1 port=$2
  mkdir -p "$work/nginx/root/store/bench" "$work/nginx/tmp"
  {
    [ "$(id -u)" -eq 0 ] && echo "user root;"
    cat <<CONF
worker_processes 2;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  client_body_temp_path $work/nginx/tmp;
  proxy_temp_path $work/nginx/tmp;
  fastcgi_temp_path $work/nginx/tmp;
  uwsgi_temp_path $work/nginx/tmp;
  scgi_temp_path $work/nginx/tmp;
  server {
    listen 127.0.0.1:$port;
    root $work/nginx/root;
    location /store/ { dav_methods PUT DELETE; create_full_put_path on; client_max_body_size 4g; }
  }
}
CONF
  } > "$work/nginx.conf"
  nginx -c "$work/nginx.conf" -e "$work/nginx-error.log" 2>/dev/null || nginx -c "$work/nginx.conf"
  for _ in $(seq 100); do [ -s "$work/nginx.pid" ] && break; sleep 0.05; done
}
