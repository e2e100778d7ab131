// Logging to stderr. Every line starts with "g4: " so it can be told apart from program output.
#pragma once

#include <string>

namespace g4 {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

void SetLogLevel(LogLevel level);
void Log(LogLevel level, const std::string& message);
inline void LogInfo(const std::string& m) { Log(LogLevel::kInfo, m); }
inline void LogWarning(const std::string& m) { Log(LogLevel::kWarning, m); }
inline void LogError(const std::string& m) { Log(LogLevel::kError, m); }

}  // namespace g4
