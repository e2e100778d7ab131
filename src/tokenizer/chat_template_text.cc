// g4's Gemma 4 chat template (Jinja), shipped in checkpoints made by `g4 make-model --tokenizer`
// so that Hugging Face-style tools render the same prompt g4's RenderChat does (chat.cc; the two
// are checked against each other by tests/tokenizer/chat_template_check.py). Written for g4, not
// copied: it follows the behaviour of the released template described in gemma4.md §4.3, using
// only Jinja that Python's jinja2 accepts. One difference remains by necessity: Jinja cannot parse
// JSON, so tool-call arguments given as a JSON string are inserted verbatim (pass them as objects,
// as vLLM and transformers do); RenderChat parses them.
#include <string>

#include "tokenizer/gemma4_vocab.h"

namespace g4 {
namespace {

constexpr const char* kHead = R"JINJA({#- Gemma 4 chat template written for g4 (see docs/tokenizer.md). -#}
{%- set Q = '<|"|>' -%}
{%- macro s(x) -%}{{ x if x is defined and x is not none else '' }}{%- endmacro -%}
{%- macro value(v, quote_keys) -%}
{%- if v is string -%}{{ Q + v + Q }}
{%- elif v is boolean -%}{{ 'true' if v else 'false' }}
{%- elif v is none -%}None
{%- elif v is mapping -%}{{ '{' }}{%- for k, x in v | dictsort -%}{{ ',' if not loop.first }}{{ (Q + k + Q) if quote_keys else k }}:{{ value(x, quote_keys) }}{%- endfor -%}{{ '}' }}
{%- elif v is iterable -%}{{ '[' }}{%- for x in v -%}{{ ',' if not loop.first }}{{ value(x, quote_keys) }}{%- endfor -%}{{ ']' }}
{%- else -%}{{ v }}
{%- endif -%}
{%- endmacro -%}
{%- macro qlist(l) -%}{%- for x in l -%}{{ ',' if not loop.first }}{{ Q + (x | string) + Q }}{%- endfor -%}{%- endmacro -%}
{%- macro upper_type(t) -%}{%- if t is string -%}{{ t | upper }}{%- elif t is defined and t is not none -%}{{ t | string | upper }}{%- endif -%}{%- endmacro -%}
{%- macro params(props) -%}
{%- set pn = namespace(first=true) -%}
{%- for key, raw in props | dictsort -%}
{%- if key not in ['description', 'type', 'properties', 'required', 'nullable'] -%}
{%- set v = raw if raw is mapping else {} -%}
{{- '' if pn.first else ',' }}{%- set pn.first = false -%}
{{- key + ':{' -}}
{%- set c = namespace(on=false) -%}
{%- if v['description'] -%}{{- 'description:' + Q + (v['description'] | string) + Q -}}{%- set c.on = true -%}{%- endif -%}
{%- set t = upper_type(v['type']) -%}
{%- if t == 'STRING' -%}
{%- if v['enum'] -%}{{- ',' if c.on }}{%- set c.on = true -%}{{- 'enum:' + value(v['enum'], true) -}}{%- endif -%}
{%- elif t == 'ARRAY' -%}
{%- if v['items'] is mapping and v['items'] -%}
{{- ',' if c.on }}{%- set c.on = true -%}{{- 'items:{' -}}
{%- set ni = namespace(first=true) -%}
{%- for ik, iv in v['items'] | dictsort -%}
{%- if iv is not none -%}
{{- '' if ni.first else ',' }}{%- set ni.first = false -%}
{%- if ik == 'properties' -%}{{- 'properties:{' + (params(iv) if iv is mapping else '') + '}' -}}
{%- elif ik == 'required' -%}{{- 'required:[' + qlist(iv) + ']' -}}
{%- elif ik == 'type' -%}{{- 'type:' + value(iv | upper if iv is string else iv | map('upper') | list, true) -}}
{%- else -%}{{- ik + ':' + value(iv, true) -}}
{%- endif -%}
{%- endif -%}
{%- endfor -%}
{{- '}' -}}
{%- endif -%}
{%- endif -%}
{%- if v['nullable'] -%}{{- ',' if c.on }}{%- set c.on = true -%}{{- 'nullable:true' -}}{%- endif -%}
{%- if t == 'OBJECT' -%}
{{- ',' if c.on }}{%- set c.on = true -%}{{- 'properties:{' + params(v['properties'] if v['properties'] is mapping else v) + '}' -}}
{%- if v['required'] -%}{{- ',required:[' + qlist(v['required']) + ']' -}}{%- endif -%}
{%- endif -%}
{{- (',' if c.on else '') + 'type:' + Q + t + Q + '}' -}}
{%- endif -%}
{%- endfor -%}
{%- endmacro -%}
{%- macro declaration(tool) -%}
{%- set f = tool['function'] if tool['function'] is mapping else tool -%}
{{- 'declaration:' + s(f['name']) + '{description:' + Q + s(f['description']) + Q -}}
{%- set p = f['parameters'] -%}
{%- if p is mapping and p -%}
{{- ',parameters:{' -}}
{%- if p['properties'] is mapping and p['properties'] -%}{{- 'properties:{' + params(p['properties']) + '},' -}}{%- endif -%}
{%- if p['required'] -%}{{- 'required:[' + qlist(p['required']) + '],' -}}{%- endif -%}
{%- if p['type'] -%}{{- 'type:' + Q + upper_type(p['type']) + Q + '}' -}}{%- endif -%}
{%- endif -%}
{%- if 'response' in f -%}
{%- set r = f['response'] -%}
{{- ',response:{' -}}
{%- if r['description'] -%}{{- 'description:' + Q + (r['description'] | string) + Q + ',' -}}{%- endif -%}
{%- if upper_type(r['type']) == 'OBJECT' -%}{{- 'type:' + Q + 'OBJECT' + Q + '}' -}}{%- endif -%}
{%- endif -%}
{{- '}' -}}
{%- endmacro -%}
{%- macro response(name, r) -%}
{{- '<|tool_response>response:' + name + '{' -}}
{%- if r is mapping -%}{%- for k, x in r | dictsort -%}{{ ',' if not loop.first }}{{ k + ':' + value(x, false) }}{%- endfor -%}
{%- else -%}{{- 'value:' + value(r, false) -}}
{%- endif -%}
{{- '}<tool_response|>' -}}
{%- endmacro -%}
{%- macro text_of(c) -%}
{%- if c is string -%}{{ c }}
{%- elif c is iterable and c is not mapping -%}{%- for part in c -%}{%- if part is mapping and part['type'] == 'text' -%}{{ s(part['text']) }}{%- endif -%}{%- endfor -%}
{%- endif -%}
{%- endmacro -%}
{%- macro strip_thinking(t) -%}
{%- set sn = namespace(out='') -%}
{%- for part in t.split('<channel|>') -%}{%- set sn.out = sn.out + part.split('<|channel>')[0] -%}{%- endfor -%}
{{- sn.out | trim -}}
{%- endmacro -%}
{%- macro content(m, model) -%}
{%- set c = m['content'] -%}
{%- if c is string -%}{{- strip_thinking(c) if model else c | trim -}}
{%- elif c is iterable and c is not mapping -%}
{%- for part in c -%}
{%- if part['type'] == 'text' -%}{{- strip_thinking(s(part['text'])) if model else s(part['text']) | trim -}}
{%- elif part['type'] in ['image', 'image_url'] -%}{{- '<|image|>' -}}
{%- elif part['type'] in ['audio', 'input_audio'] -%}{{- '<|audio|>' -}}
{%- elif part['type'] == 'video' -%}{{- '<|video|>' -}}
{%- endif -%}
{%- endfor -%}
{%- endif -%}
{%- endmacro -%}
{%- set think = enable_thinking is defined and enable_thinking -%}
{%- set ns = namespace(prev='', first=0, last_user=-1) -%}
{{- bos_token -}}
{%- if messages and messages[0]['role'] in ['system', 'developer'] -%}{%- set ns.first = 1 -%}{%- endif -%}
{%- if think or tools or ns.first -%}
{{- '<|turn>system\n' -}}
{%- if think -%}{{- '<|think|>\n' -}}{%- endif -%}
{%- if ns.first -%}{{- text_of(messages[0]['content']) | trim -}}{%- endif -%}
{%- for tool in tools or [] -%}{{- '<|tool>' + (declaration(tool) | trim) + '<tool|>' -}}{%- endfor -%}
{{- '<turn|>\n' -}}
{%- endif -%}
{%- for i in range(ns.first, messages | length) -%}{%- if messages[i]['role'] == 'user' -%}{%- set ns.last_user = i -%}{%- endif -%}{%- endfor -%}
{%- for i in range(ns.first, messages | length) -%}
{%- set m = messages[i] -%}
{%- if m['role'] == 'tool' -%}
{%- set tn = namespace(j=i) -%}
{%- for k in range(i - 1, ns.first - 1, -1) -%}{%- if tn.j == k + 1 and messages[k]['role'] == 'tool' -%}{%- set tn.j = k -%}{%- endif -%}{%- endfor -%}
{%- if not (tn.j > ns.first and messages[tn.j - 1]['role'] == 'assistant' and messages[tn.j - 1]['tool_calls']) -%}
{{- raise_exception('a tool message must follow an assistant message with tool_calls') -}}
{%- endif -%}
{%- else -%}
{%- set model = m['role'] == 'assistant' -%}
{%- set pv = namespace(role='', done=false) -%}
{%- for k in range(i - 1, ns.first - 1, -1) -%}{%- if not pv.done and messages[k]['role'] != 'tool' -%}{%- set pv.role = messages[k]['role'] -%}{%- set pv.done = true -%}{%- endif -%}{%- endfor -%}
{%- if not (model and pv.role == 'assistant') -%}{{- '<|turn>' + ('model' if model else ('system' if m['role'] == 'developer' else m['role'])) + '\n' -}}{%- endif -%}
{%- set ns.prev = '' -%}
{%- set calls = m['tool_calls'] if model and m['tool_calls'] else [] -%}
{%- set thinking = (m['reasoning'] or m['reasoning_content']) if model else '' -%}
{%- if thinking and calls and i > ns.last_user -%}{{- '<|channel>thought\n' + (thinking | string) + '\n<channel|>' -}}{%- endif -%}
{%- for c in calls -%}
{%- set a = c['function']['arguments'] -%}
{{- '<|tool_call>call:' + s(c['function']['name']) + '{' -}}
{%- if a is mapping -%}{%- for k, x in a | dictsort -%}{{ ',' if not loop.first }}{{ k + ':' + value(x, false) }}{%- endfor -%}
{%- elif a is string -%}{{- a -}}
{%- endif -%}
{{- '}<tool_call|>' -}}
{%- endfor -%}
{%- if calls -%}{%- set ns.prev = 'tool_call' -%}{%- endif -%}
{%- set tr = namespace(done=false, stop=false) -%}
{%- if model and m['tool_responses'] -%}
{%- for r in m['tool_responses'] -%}{{- response(r['name'] if r['name'] else 'unknown', r['response']) -}}{%- endfor -%}
{%- set tr.done = true -%}{%- set ns.prev = 'tool_response' -%}
{%- elif calls -%}
{%- for k in range(i + 1, messages | length) -%}
{%- if not tr.stop and messages[k]['role'] == 'tool' -%}
{%- set t = messages[k] -%}
{%- set nm = namespace(name=(t['name'] if t['name'] else 'unknown')) -%}
{%- for c in calls -%}{%- if c['id'] is defined and c['id'] == t['tool_call_id'] -%}{%- set nm.name = s(c['function']['name']) -%}{%- endif -%}{%- endfor -%}
{%- set body = t['content'] -%}
{{- response(nm.name, text_of(body) if (body is iterable and body is not string and body is not mapping) else body) -}}
{%- set tr.done = true -%}{%- set ns.prev = 'tool_response' -%}
{%- else -%}{%- set tr.stop = true -%}
{%- endif -%}
{%- endfor -%}
{%- endif -%}
{{- content(m, model) -}}
{%- if m['content'] is iterable and m['content'] is not string and m['content'] is not mapping -%}
{%- for part in m['content'] -%}{%- if part['type'] in ['image', 'image_url', 'audio', 'input_audio', 'video'] -%}{%- set ns.prev = 'media' -%}{%- endif -%}{%- endfor -%}
{%- endif -%}
{%- if ns.prev == 'tool_call' and not tr.done -%}{{- '<|tool_response>' -}}
{%- elif not (tr.done and not m['content']) -%}{{- '<turn|>\n' -}}
{%- endif -%}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt and ns.prev not in ['tool_call', 'tool_response'] -%}
{{- '<|turn>model\n' -}}
)JINJA";

// Only in the 26B/31B form: with thinking off, the prompt pre-closes an empty thought block.
constexpr const char* kLargeModelGenerationPrompt =
    R"JINJA({%- if not think -%}{{- '<|channel>thought\n<channel|>' -}}{%- endif -%}
)JINJA";

constexpr const char* kTail = R"JINJA({%- endif -%}
)JINJA";

}  // namespace

std::string Gemma4ChatTemplate(bool large_model) {
  std::string t = kHead;
  if (large_model) t += kLargeModelGenerationPrompt;
  t += kTail;
  return t;
}

}  // namespace g4
