# The app of the template tests (test_dockerfile.sh, tests/e2b/template.mjs):
# answers every GET with its APP_NAME and working directory.
import http.server
import os


class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("hello from %s in %s\n" % (os.environ.get("APP_NAME"), os.getcwd())).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


http.server.HTTPServer(("127.0.0.1", 8000), Hello).serve_forever()
