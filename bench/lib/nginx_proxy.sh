# The nginx reverse proxy that Turnpike is compared with (bench/compare.sh, bench/callgrind.sh):
# HTTP/1.1 keep-alive to the upstream and the forwarding headers APISIX sets (Host, X-Real-IP,
# X-Forwarded-For/-Proto/-Host/-Port), so both proxies do the same work. Sourced; defines
# functions only.

# nginx_proxy_upstream_server UPSTREAM_PORT KEEPALIVE LISTEN: prints the `upstream backend`
# and `server` blocks of an http context (LISTEN: the listen directive's arguments).
nginx_proxy_upstream_server() {
  cat <<EOF
    upstream backend {
        server 127.0.0.1:$1;
        keepalive $2;
    }
    server {
        listen $3;
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host;
            proxy_set_header X-Real-IP \$remote_addr;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto \$scheme;
            proxy_set_header X-Forwarded-Host \$host;
            proxy_set_header X-Forwarded-Port \$server_port;
        }
    }
EOF
}
