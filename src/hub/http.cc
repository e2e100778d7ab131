#include "hub/http.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>

namespace g4::hub {

namespace {

struct Transfer {
  HttpResponse* response;
  CURL* curl;
  FILE* out = nullptr;  // null: the body goes to response->body
  const std::function<void(uint64_t)>* on_bytes = nullptr;
  uint64_t range_from = 0;
  uint64_t file_base = 0;  // bytes of the file before this body: range_from for a 206, else 0
  bool started = false;
  uint64_t written = 0;
  bool write_failed = false;
};

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string line(data, size * n);
  if (line.starts_with("HTTP/")) {  // a new response (after a redirect): forget the last one
    t->response->headers.clear();
    return size * n;
  }
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return size * n;
  std::string name = line.substr(0, colon);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  std::string value = line.substr(colon + 1);
  const size_t b = value.find_first_not_of(" \t");
  const size_t e = value.find_last_not_of(" \t\r\n");
  value = b == std::string::npos ? "" : value.substr(b, e - b + 1);
  t->response->headers[name] = value;
  return size * n;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  long status = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
  // Only a 2xx body is the file's; an error page is kept to explain the status.
  if (!t->out || status < 200 || status >= 300) {
    t->response->body.append(data, size * n);
    return size * n;
  }
  if (!t->started) {
    t->started = true;
    t->file_base = status == 206 ? t->range_from : 0;
    if (t->range_from > 0 && status != 206) {
      // The server ignored the Range and sends the whole file: start the file over.
      std::fflush(t->out);
      if (ftruncate(fileno(t->out), 0) != 0 || std::fseek(t->out, 0, SEEK_SET) != 0) {
        t->write_failed = true;
        return 0;
      }
    }
  }
  if (std::fwrite(data, 1, size * n, t->out) != size * n) {
    t->write_failed = true;
    return 0;  // aborts the transfer
  }
  t->written += size * n;
  if (t->on_bytes && *t->on_bytes) (*t->on_bytes)(t->file_base + t->written);
  return size * n;
}

StatusOr<HttpResponse> Perform(const HttpRequest& request, FILE* out,
                               const std::function<void(uint64_t)>* on_bytes) {
  static std::once_flag init;
  std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) return Internal("curl_easy_init failed");
  HttpResponse response;
  Transfer t{&response, curl.get(), out, on_bytes, request.range_from};
  curl_slist* headers = nullptr;
  for (const auto& h : request.headers) headers = curl_slist_append(headers, h.c_str());
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> header_list(headers, &curl_slist_free_all);
  CURL* c = curl.get();
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "g4");
  curl_easy_setopt(c, CURLOPT_NOBODY, request.head ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, request.follow_redirects ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 20L);
  // A stalled transfer (under 1 byte/s for 60 s) fails instead of hanging forever.
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  const std::string range = std::to_string(request.range_from) + "-";
  if (request.range_from > 0) curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
  const CURLcode rc = curl_easy_perform(c);
  if (t.write_failed) return IoError("cannot write the download of " + request.url);
  if (rc != CURLE_OK) {
    return Unavailable("network error on " + request.url + ": " +
                       (error[0] ? std::string(error) : curl_easy_strerror(rc)));
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

}  // namespace

std::string HttpResponse::Header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

StatusOr<HttpResponse> HttpFetch(const HttpRequest& request) {
  return Perform(request, nullptr, nullptr);
}

StatusOr<HttpResponse> HttpDownload(const HttpRequest& request, FILE* out,
                                    const std::function<void(uint64_t)>& on_bytes) {
  return Perform(request, out, &on_bytes);
}

std::string UrlQuote(const std::string& s, const std::string& safe) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '_' || c == '.' || c == '-' || c == '~' ||
        safe.find(static_cast<char>(c)) != std::string::npos) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace g4::hub
