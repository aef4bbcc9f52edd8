#include "output/html_report.h"

#include <algorithm>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace emo::output {
namespace {

using nlohmann::json;

/// Merges intervals closer than `resolution_ns` (critical wins; the first name is kept).
std::vector<ReportLane::Interval> merge(std::vector<ReportLane::Interval> v, std::int64_t resolution_ns) {
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  std::vector<ReportLane::Interval> out;
  for (auto& iv : v) {
    if (!out.empty() && iv.start_ns - out.back().end_ns < resolution_ns && iv.critical == out.back().critical) {
      out.back().end_ns = std::max(out.back().end_ns, iv.end_ns);
      continue;
    }
    out.push_back(std::move(iv));
  }
  return out;
}

/// JSON safe to embed in a <script> element.
std::string script_safe(const json& j) {
  std::string s = j.dump();
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<' && i + 1 < s.size() && s[i + 1] == '/') {
      out += "<\\/";
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string escape_html(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

constexpr const char* kStyle = R"(
body{font:14px system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:18px;margin:0 0 8px}
.banner{background:#fff3cd;border:1px solid #e0c060;padding:6px 10px;margin:8px 0;display:inline-block}
table{border-collapse:collapse;margin:8px 0}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}
svg{border:1px solid #ddd;background:#fff;display:block;margin:8px 0}
.legend span{display:inline-block;width:14px;height:10px;margin:0 4px 0 12px;vertical-align:middle}
)";

// Draws the timeline and the frontier into SVG from the embedded data; sets
// document.body.dataset.drawn = "<rects>,<points>" when done (the headless-browser test reads it).
constexpr const char* kScript = R"(
(function(){
const d=JSON.parse(document.getElementById('emo-data').textContent);
const NS='http://www.w3.org/2000/svg';
function el(tag,attrs,parent,text){const e=document.createElementNS(NS,tag);for(const k in attrs)e.setAttribute(k,attrs[k]);if(text!==undefined)e.textContent=text;parent.appendChild(e);return e;}
function clockColour(f){const lo=d.min_clock_mhz,hi=d.max_clock_mhz;const t=hi>lo?(f-lo)/(hi-lo):1;
  return 'hsl('+Math.round(240*(1-t))+',75%,50%)';}
let rects=0,points=0;
// Timeline.
const W=1240,left=170,lh=18,top=24;
const gpus=[...new Set(d.packs.map(p=>p.gpu))].sort((a,b)=>a-b);
const H=top+lh*(d.lanes.length+gpus.length)+30;
const tl=el('svg',{width:W,height:H,id:'timeline'},document.getElementById('timeline-box'));
const sx=t=>left+(W-left-50)*t/d.makespan_ns;
let row=0;
for(const g of gpus){const y=top+row*lh;el('text',{x:4,y:y+13,'font-size':11},tl,'GPU '+g+' packs');
  for(const p of d.packs.filter(p=>p.gpu===g)){const r=el('rect',{x:sx(p.start_ns),y:y+2,width:Math.max(1,sx(p.end_ns)-sx(p.start_ns)),height:lh-4,fill:clockColour(p.clock_mhz),stroke:'#333','stroke-width':0.5,class:'pack'},tl);
    el('title',{},r,p.clock_mhz+' MHz, '+p.ops+' ops, '+((p.end_ns-p.start_ns)/1e6).toFixed(3)+' ms');rects++;}
  row++;}
for(const lane of d.lanes){const y=top+row*lh;el('text',{x:4,y:y+13,'font-size':11},tl,lane.label);
  for(const iv of lane.intervals){const r=el('rect',{x:sx(iv[0]),y:y+3,width:Math.max(0.5,sx(iv[1])-sx(iv[0])),height:lh-6,
      fill:iv[2]?'#d62728':(lane.gpu>=0?'#4c78a8':'#9c9c9c'),class:iv[2]?'op critical':'op'},tl);
    if(iv[3])el('title',{},r,iv[3]);rects++;}
  row++;}
const ay=top+row*lh+14;el('line',{x1:left,x2:sx(d.makespan_ns),y1:ay-10,y2:ay-10,stroke:'#999'},tl);
for(let i=0;i<=5;i++){const t=d.makespan_ns*i/5;el('text',{x:sx(t)-10,y:ay+4,'font-size':10},tl,(t/1e6).toFixed(2)+' ms');}
// Frontier.
const fw=640,fh=360,fl=70,fb=40;
const fr=el('svg',{width:fw,height:fh,id:'frontier'},document.getElementById('frontier-box'));
const all=d.frontier.concat(d.markers);
if(all.length){
  const tx=all.map(p=>p.time_s),ey=all.map(p=>p.energy_j);
  let t0=Math.min(...tx),t1=Math.max(...tx),e0=Math.min(...ey),e1=Math.max(...ey);
  if(t1<=t0)t1=t0+1e-9;if(e1<=e0)e1=e0+1e-9;
  const px=t=>fl+(fw-fl-60)*(t-t0)/(t1-t0),py=e=>fh-fb-(fh-fb-20)*(e-e0)/(e1-e0);
  el('line',{x1:fl,x2:fw-20,y1:fh-fb,y2:fh-fb,stroke:'#999'},fr);el('line',{x1:fl,x2:fl,y1:20,y2:fh-fb,stroke:'#999'},fr);
  el('text',{x:fw/2-40,y:fh-8,'font-size':12},fr,'iteration time (s)');
  el('text',{x:4,y:14,'font-size':12},fr,'energy (J)');
  for(let i=0;i<=4;i++){el('text',{x:fl+(fw-fl-60)*i/4-12,y:fh-fb+14,'font-size':10},fr,(t0+(t1-t0)*i/4).toPrecision(4));
    el('text',{x:2,y:py(e0+(e1-e0)*i/4)+4,'font-size':10},fr,(e0+(e1-e0)*i/4).toPrecision(4));}
  if(d.frontier.length>1)el('polyline',{points:d.frontier.map(p=>px(p.time_s)+','+py(p.energy_j)).join(' '),fill:'none',stroke:'#4c78a8'},fr);
  for(const p of d.frontier){el('circle',{cx:px(p.time_s),cy:py(p.energy_j),r:2.5,fill:'#4c78a8',class:'frontier-point'},fr);points++;}
  const mc={'baseline':'#000','static best':'#ff7f0e','EMO':'#2ca02c'};
  for(const m of d.markers){const c=el('circle',{cx:px(m.time_s),cy:py(m.energy_j),r:6,fill:'none',stroke:mc[m.label]||'#d62728','stroke-width':2.5,class:'marker'},fr);
    el('title',{},c,m.label);el('text',{x:px(m.time_s)+8,y:py(m.energy_j)-8,'font-size':11,fill:mc[m.label]||'#d62728'},fr,m.label);points++;}
}
document.body.dataset.drawn=rects+','+points;
})();
)";

}  // namespace

std::string render_html_report(const HtmlReport& r) {
  if (r.makespan_ns <= 0) throw std::invalid_argument("html report: makespan must be positive");
  const std::int64_t resolution = std::max<std::int64_t>(1, r.makespan_ns / 4000);
  json lanes = json::array();
  for (const auto& lane : r.lanes) {
    json ivs = json::array();
    for (const auto& iv : merge(lane.intervals, resolution))
      ivs.push_back(json::array({iv.start_ns, iv.end_ns, iv.critical ? 1 : 0, iv.name}));
    lanes.push_back({{"label", lane.label}, {"gpu", lane.gpu}, {"intervals", std::move(ivs)}});
  }
  json packs = json::array();
  for (const auto& p : r.packs)
    packs.push_back({{"gpu", p.gpu}, {"start_ns", p.start_ns}, {"end_ns", p.end_ns}, {"clock_mhz", p.clock_mhz}, {"ops", p.ops}});
  auto points = [](const std::vector<ReportPoint>& v) {
    json a = json::array();
    for (const auto& p : v) a.push_back({{"time_s", p.time_s}, {"energy_j", p.energy_j}, {"label", p.label}});
    return a;
  };
  const json data = {{"makespan_ns", r.makespan_ns}, {"lanes", std::move(lanes)},      {"packs", std::move(packs)},
                     {"min_clock_mhz", r.min_clock_mhz}, {"max_clock_mhz", r.max_clock_mhz},
                     {"frontier", points(r.frontier)}, {"markers", points(r.markers)}};
  std::string html = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>EMO report: " + escape_html(r.title) +
                     "</title><style>" + kStyle + "</style></head><body>\n";
  html += "<h1>EMO report: " + escape_html(r.title) + " on " + escape_html(r.gpu) + "</h1>\n";
  if (r.simulated)
    html += "<div class=\"banner\">Simulated device: every time and energy figure here comes from EMO's simulated "
            "GPU, not from hardware.</div>\n";
  html += "<table><tr><th>schedule</th><th>time (s)</th><th>energy (J)</th><th>savings</th><th>slowdown</th></tr>\n";
  for (const auto& row : r.rows) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "<td>%.6f</td><td>%.3f</td><td>%.2f %%</td><td>%.2f %%</td>", row.time_s, row.energy_j,
                  100 * row.savings, 100 * row.slowdown);
    html += "<tr><td>" + escape_html(row.label) + "</td>" + buf + "</tr>\n";
  }
  html += "</table>\n";
  for (const auto& n : r.notes) html += "<p>" + escape_html(n) + "</p>\n";
  html += "<h2>Timeline</h2><div class=\"legend\"><span style=\"background:#4c78a8\"></span>GPU op"
          "<span style=\"background:#d62728\"></span>critical path<span style=\"background:#9c9c9c\"></span>CPU"
          "<span style=\"background:linear-gradient(90deg,hsl(240,75%,50%),hsl(180,75%,50%),hsl(120,75%,50%),hsl(60,75%,50%),hsl(0,75%,50%))\"></span>packs: colour = SM "
          "clock from " +
          std::to_string(static_cast<int>(r.min_clock_mhz)) + " MHz (blue) to " +
          std::to_string(static_cast<int>(r.max_clock_mhz)) + " MHz (red)</div><div id=\"timeline-box\"></div>\n";
  html += "<h2>Energy–latency frontier</h2><div id=\"frontier-box\"></div>\n";
  html += "<script type=\"application/json\" id=\"emo-data\">" + script_safe(data) + "</script>\n";
  html += std::string("<script>") + kScript + "</script>\n</body></html>\n";
  return html;
}

}  // namespace emo::output
