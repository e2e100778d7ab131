// The few HTTP calls g4 pull makes, over libcurl: a request whose body is kept in memory (the
// hub's JSON API, HEAD on a file) and one whose body is appended to a file (a download, resumed
// with a Range header). Transport failures are Unavailable errors naming the URL; HTTP error
// statuses are returned as responses, for the caller to word.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace g4::hub {

struct HttpRequest {
  std::string url;
  bool head = false;               // HEAD instead of GET
  bool follow_redirects = true;    // false: a 3xx comes back as it is (its Location header)
  std::vector<std::string> headers;  // "Name: value"
  uint64_t range_from = 0;         // > 0: "Range: bytes=<range_from>-"
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // names lowercased; the last response's
  std::string body;                            // in memory (error bodies of downloads too)
  std::string Header(const std::string& lower_name) const;
};

StatusOr<HttpResponse> HttpFetch(const HttpRequest& request);

// GET whose 2xx body is appended to `out` (opened for appending, range_from bytes long); a 200
// to a Range request starts the file over. `on_bytes` is called after every chunk written with
// the file's size so far.
StatusOr<HttpResponse> HttpDownload(const HttpRequest& request, FILE* out,
                                    const std::function<void(uint64_t)>& on_bytes);

// Percent-encodes `s` as Python's urllib.parse.quote does (`safe` characters kept).
std::string UrlQuote(const std::string& s, const std::string& safe = "/");

}  // namespace g4::hub
