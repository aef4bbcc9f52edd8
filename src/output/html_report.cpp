#include "output/html_report.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
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
h2{font-size:16px;margin:16px 0 4px}
.banner{background:#fff3cd;border:1px solid #e0c060;padding:6px 10px;margin:8px 0;display:inline-block}
table{border-collapse:collapse;margin:8px 0}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}
svg{border:1px solid #ddd;background:#fff;display:block;margin:8px 0}
.plots{display:flex;flex-wrap:wrap;gap:16px}
.plots>div{max-width:620px}
.packs-box{max-height:480px;overflow:auto;display:inline-block}
.packs-box td.nm{color:#999}
.legend span{display:inline-block;width:14px;height:10px;margin:0 4px 0 12px;vertical-align:middle}
)";

// The drawing script, in three parts (helpers and the timeline; the energy–latency plot; power):
// it draws into SVG from the embedded data and sets document.body.dataset.drawn =
// "<rects>,<points>" and dataset.frontierBox = "x,y,w,h" when done (the headless-browser test reads them).
constexpr const char* kScriptTimeline = R"(
const d=JSON.parse(document.getElementById('emo-data').textContent);
const NS='http://www.w3.org/2000/svg';
function el(tag,attrs,parent,text){const e=document.createElementNS(NS,tag);for(const k in attrs)e.setAttribute(k,attrs[k]);if(text!==undefined)e.textContent=text;parent.appendChild(e);return e;}
function clockColour(f){const lo=d.min_clock_mhz,hi=d.max_clock_mhz;const t=hi>lo?(f-lo)/(hi-lo):1;
  return 'hsl('+Math.round(240*(1-t))+',75%,50%)';}
let rects=0,points=0;
const W=1240,left=170,lh=18,top=24;
// Rows: a header per lane group; a GPU's group opens with its packs row.
const rows=[],packGpus=new Set(),laneRow=[];let group=null;
d.lanes.forEach((lane,i)=>{const g=lane.group||lane.label;
  if(g!==group){rows.push({kind:'header',label:g});group=g;
    if(lane.gpu>=0&&!packGpus.has(lane.gpu)){rows.push({kind:'packs',gpu:lane.gpu});packGpus.add(lane.gpu);}}
  laneRow[i]=rows.length;rows.push({kind:'lane',lane:lane});});
if(d.timeline)for(const g of [...new Set(d.packs.map(p=>p.gpu))].sort((a,b)=>a-b))
  if(!packGpus.has(g)){rows.push({kind:'header',label:'GPU '+g});rows.push({kind:'packs',gpu:g});}
const H=top+lh*rows.length+30;
const tl=el('svg',{width:W,height:H,id:'timeline'},document.getElementById('timeline-box')||document.createElement('div'));
const sx=t=>left+(W-left-50)*t/d.makespan_ns;
rows.forEach((row,k)=>{const y=top+k*lh;
  if(row.kind==='header'){el('rect',{x:0,y:y+1,width:W,height:lh-2,fill:'#eef2f7',class:'lane-group'},tl);
    el('text',{x:4,y:y+13,'font-size':11,'font-weight':'bold'},tl,row.label);return;}
  if(row.kind==='packs'){el('text',{x:12,y:y+13,'font-size':11},tl,'packs (clock)');
    for(const p of d.packs.filter(p=>p.gpu===row.gpu)){const r=el('rect',{x:sx(p.start_ns),y:y+2,width:Math.max(1,sx(p.end_ns)-sx(p.start_ns)),height:lh-4,fill:clockColour(p.clock_mhz),stroke:'#333','stroke-width':0.5,class:'pack'},tl);
      el('title',{},r,p.clock_mhz+' MHz, '+p.ops+' ops, '+((p.end_ns-p.start_ns)/1e6).toFixed(3)+' ms');rects++;}
    return;}
  const lane=row.lane;el('text',{x:12,y:y+13,'font-size':11},tl,lane.label);
  for(const iv of lane.intervals){const r=el('rect',{x:sx(iv[0]),y:y+3,width:Math.max(0.5,sx(iv[1])-sx(iv[0])),height:lh-6,
      fill:iv[2]?'#d62728':(lane.gpu>=0?'#4c78a8':'#9c9c9c'),class:iv[2]?'op critical':'op'},tl);
    if(iv[3])el('title',{},r,iv[3]);rects++;}});
// The critical path: its route (thin, dashed: along each step's lane, then lane to lane across the
// gap to the next step) and its steps (thick).
if(d.path.length){const pts=[];let steps='';
  for(const s of d.path){const y=top+laneRow[s[0]]*lh+lh/2;pts.push(sx(s[1])+','+y,sx(s[2])+','+y);
    steps+='M'+sx(s[1])+' '+y+'H'+Math.max(sx(s[2]),sx(s[1])+1);}
  el('polyline',{points:pts.join(' '),fill:'none',stroke:'#111','stroke-width':1,'stroke-dasharray':'4,3',class:'critical-path'},tl);
  el('path',{d:steps,fill:'none',stroke:'#111','stroke-width':3,class:'critical-path-steps'},tl);}
const ay=top+rows.length*lh+14;el('line',{x1:left,x2:sx(d.makespan_ns),y1:ay-10,y2:ay-10,stroke:'#999'},tl);
for(let i=0;i<=5;i++){const t=d.makespan_ns*i/5;el('text',{x:sx(t)-10,y:ay+4,'font-size':10},tl,(t/1e6).toFixed(2)+' ms');}
)";

// The job view (a linked job only): one lane per rank (its GPU's packs coloured by clock, its
// savings at the right) and the critical path by rank (thick on each stretch's lane, dashed from
// rank to rank); body[data-rank-drawn] = "<lanes>,<packs>,<stretches>".
constexpr const char* kScriptRanks = R"(
if(d.ranks.length){const rl=16,rt=6,RW=W+40,RH=rt+rl*d.ranks.length+28;
  const rs=el('svg',{width:RW,height:RH,id:'ranks'},document.getElementById('ranks-box'));
  const yOf=[];let rp=0;
  d.ranks.forEach((rk,i)=>{const y=rt+i*rl;yOf.push(y+rl/2);
    el('rect',{x:0,y:y,width:RW,height:rl,fill:i%2?'#f4f7fb':'#ffffff',class:'rank-lane'},rs);
    el('text',{x:4,y:y+12,'font-size':11},rs,'rank '+rk.rank);
    for(const p of d.packs.filter(p=>p.gpu===rk.gpu)){const r=el('rect',{x:sx(p.start_ns),y:y+2,width:Math.max(1,sx(p.end_ns)-sx(p.start_ns)),height:rl-4,fill:clockColour(p.clock_mhz),stroke:'#333','stroke-width':0.5,class:'rank-pack'},rs);
      el('title',{},r,'rank '+rk.rank+': '+p.clock_mhz+' MHz, '+p.ops+' ops, '+((p.end_ns-p.start_ns)/1e6).toFixed(3)+' ms');rp++;}
    el('text',{x:W-44,y:y+12,'font-size':11,class:'rank-savings'},rs,rk.savings===null?'n/m':(100*rk.savings).toFixed(1)+' %');});
  if(d.rank_path.length){const pts=[];let steps='';
    for(const s of d.rank_path){const y=yOf[s[0]];pts.push(sx(s[1])+','+y,sx(s[2])+','+y);
      steps+='M'+sx(s[1])+' '+y+'H'+Math.max(sx(s[2]),sx(s[1])+1);}
    el('polyline',{points:pts.join(' '),fill:'none',stroke:'#111','stroke-width':1,'stroke-dasharray':'4,3',class:'rank-critical-path'},rs);
    el('path',{d:steps,fill:'none',stroke:'#111','stroke-width':3,class:'rank-critical-path-steps'},rs);}
  const ry=RH-10;for(let i=0;i<=5;i++){const t=d.makespan_ns*i/5;el('text',{x:sx(t)-10,y:ry,'font-size':10},rs,(t/1e6).toFixed(2)+' ms');}
  document.body.dataset.rankDrawn=d.ranks.length+','+rp+','+d.rank_path.length;}
)";

constexpr const char* kScriptFrontier = R"(
function axes(svg,w,h,l,b,xs,ys,xlabel,ylabel,px,py){
  el('line',{x1:l,x2:w-20,y1:h-b,y2:h-b,stroke:'#999'},svg);el('line',{x1:l,x2:l,y1:20,y2:h-b,stroke:'#999'},svg);
  el('text',{x:w/2-50,y:h-8,'font-size':12},svg,xlabel);el('text',{x:4,y:12,'font-size':12},svg,ylabel);
  for(let i=0;i<=4;i++){const x=xs[0]+(xs[1]-xs[0])*i/4,y=ys[0]+(ys[1]-ys[0])*i/4;
    el('text',{x:px(x)-12,y:h-b+14,'font-size':10},svg,x.toPrecision(4));el('text',{x:2,y:py(y)+4,'font-size':10},svg,y.toPrecision(4));}}
function legend(svg,x,y,items){items.forEach((it,i)=>{el('line',{x1:x,x2:x+18,y1:y+i*15,y2:y+i*15,stroke:it[0],'stroke-width':it[2]||2.5,'stroke-dasharray':it[3]||''},svg);
  el('text',{x:x+22,y:y+i*15+4,'font-size':11},svg,it[1]);});}
const fw=600,fh=380,fl=70,fb=40;
const fr=el('svg',{width:fw,height:fh,id:'frontier'},document.getElementById('frontier-box'));
const all=d.frontier.concat(d.static_curve,d.markers);
if(all.length){
  const tx=all.map(p=>p.time_s).concat(d.target_s>0?[d.target_s]:[]),ey=all.map(p=>p.energy_j);
  let t0=Math.min(...tx),t1=Math.max(...tx),e0=Math.min(...ey),e1=Math.max(...ey);
  if(t1<=t0)t1=t0+1e-9;if(e1<=e0)e1=e0+1e-9;const tp=(t1-t0)*0.04,ep=(e1-e0)*0.08;t0-=tp;t1+=tp;e0-=ep;e1+=ep;
  const px=t=>fl+(fw-fl-30)*(t-t0)/(t1-t0),py=e=>fh-fb-(fh-fb-20)*(e-e0)/(e1-e0);
  axes(fr,fw,fh,fl,fb,[t0,t1],[e0,e1],'iteration time (s)','energy (J)',px,py);
  if(d.target_s>0){el('line',{x1:px(d.target_s),x2:px(d.target_s),y1:20,y2:fh-fb,stroke:'#d62728','stroke-width':1.5,'stroke-dasharray':'6,4',class:'target-line'},fr);
    el('text',{x:px(d.target_s)+4,y:fh-fb-6,'font-size':11,fill:'#d62728',transform:'rotate(-90 '+(px(d.target_s)+4)+' '+(fh-fb-6)+')',dy:9},fr,'latency target');}
  const curve=(pts,colour,cls)=>{const s=[...pts].sort((a,b)=>a.time_s-b.time_s);
    if(s.length>1)el('polyline',{points:s.map(p=>px(p.time_s)+','+py(p.energy_j)).join(' '),fill:'none',stroke:colour,'stroke-width':2.5,class:cls+'-curve'},fr);
    for(const p of s){el('circle',{cx:px(p.time_s),cy:py(p.energy_j),r:3,fill:colour,class:cls+'-point'},fr);points++;}};
  curve(d.static_curve,'#ff7f0e','static');curve(d.frontier,'#1f77b4','frontier');
  const mc={'baseline':'#000000','static best':'#9467bd','EMO':'#2ca02c','EMO (predicted)':'#2ca02c'};
  for(const m of d.markers){const c=mc[m.label]||'#8c564b',x=px(m.time_s),y=py(m.energy_j);let e;
    if(m.label==='static best')e=el('rect',{x:x-6,y:y-6,width:12,height:12,fill:'none',stroke:c,'stroke-width':2.5,transform:'rotate(45 '+x+' '+y+')',class:'marker static-best-marker'},fr);
    else e=el('circle',{cx:x,cy:y,r:6,fill:'none',stroke:c,'stroke-width':2.5,'stroke-dasharray':m.label==='EMO (predicted)'?'3,2':'',class:'marker'},fr);
    el('title',{},e,m.label);el('text',{x:x+8,y:y+(m.label==='EMO (predicted)'?16:-8),'font-size':11,fill:c},fr,m.label);points++;}
  legend(fr,fw-230,34,[['#1f77b4','EMO frontier (predicted)'],['#ff7f0e','static clocks ('+d.measured+')'],['#d62728','latency target',1.5,'6,4']]);
}
const fb_=fr.getBoundingClientRect();document.body.dataset.frontierBox=[fb_.left+window.scrollX,fb_.top+window.scrollY,fb_.width,fb_.height].map(Math.round).join(',');
)";

constexpr const char* kScriptPower = R"(
const pw=600,ph=380,pl=70,pb=40;
const ps=el('svg',{width:pw,height:ph,id:'power'},document.getElementById('power-box'));
const series=[[d.power.baseline,'#555555','baseline'],[d.power.emo,'#2ca02c','EMO policy']].filter(s=>s[0].w.length);
if(series.length){
  const T=Math.max(...series.map(s=>s[0].duration_ns))/1e6,P=Math.max(...series.map(s=>Math.max(...s[0].w)))*1.08;
  const px=t=>pl+(pw-pl-30)*t/T,py=w=>ph-pb-(ph-pb-20)*w/P;
  axes(ps,pw,ph,pl,pb,[0,T],[0,P],'time in the iteration (ms)','power (W)',px,py);
  for(const [s,c,label] of series){const n=s.w.length,dt=s.duration_ns/1e6/n,pts=[];
    s.w.forEach((w,i)=>{pts.push(px(i*dt)+','+py(w),px((i+1)*dt)+','+py(w));});
    el('polyline',{points:pts.join(' '),fill:'none',stroke:c,'stroke-width':1.5,class:'power-line'},ps);}
  legend(ps,pw-230,34,series.map(s=>[s[1],s[2]+' ('+d.measured+')']));
}else{el('text',{x:pl,y:ph/2,'font-size':13},ps,'Power over the iteration: '+(d.no_power||'not measured on this device.'));}
document.body.dataset.drawn=rects+','+points;
)";

json points_json(const std::vector<ReportPoint>& v) {
  json a = json::array();
  for (const auto& p : v) a.push_back({{"time_s", p.time_s}, {"energy_j", p.energy_j}, {"label", p.label}});
  return a;
}

/// A rank's own savings (1 − its GPU's kept-plan energy / its baseline energy), or nullopt when
/// not measured.
std::optional<double> rank_savings(const ReportRank& k) {
  if (!k.baseline_j || !k.emo_j || *k.baseline_j <= 0) return std::nullopt;
  return 1.0 - *k.emo_j / *k.baseline_j;
}

/// The job view's ranks: {rank, gpu, savings (null: not measured)}.
json ranks_json(const HtmlReport& r) {
  json out = json::array();
  for (const ReportRank& k : r.ranks) {
    const std::optional<double> s = rank_savings(k);
    out.push_back({{"rank", k.rank}, {"gpu", k.gpu}, {"savings", s ? json(*s) : json()}});
  }
  return out;
}

/// The critical path by rank: [rank index, start_ns, end_ns] per stretch. Throws
/// std::invalid_argument for a stretch that names no rank.
json rank_path_json(const HtmlReport& r) {
  json out = json::array();
  for (const ReportRankStretch& s : r.rank_path) {
    if (s.rank < 0 || static_cast<std::size_t>(s.rank) >= r.ranks.size())
      throw std::invalid_argument("html report: a critical-path stretch names rank index " + std::to_string(s.rank));
    out.push_back(json::array({s.rank, s.start_ns, s.end_ns}));
  }
  return out;
}

/// The data the script draws from.
json report_data(const HtmlReport& r) {
  const std::int64_t resolution = std::max<std::int64_t>(1, r.makespan_ns / 4000);
  json lanes = json::array();
  for (const auto& lane : r.lanes) {
    json ivs = json::array();
    for (const auto& iv : merge(lane.intervals, resolution))
      ivs.push_back(json::array({iv.start_ns, iv.end_ns, iv.critical ? 1 : 0, iv.name}));
    lanes.push_back({{"label", lane.label}, {"gpu", lane.gpu}, {"group", lane.group}, {"intervals", std::move(ivs)}});
  }
  json packs = json::array();
  for (const auto& p : r.packs)
    packs.push_back({{"gpu", p.gpu}, {"start_ns", p.start_ns}, {"end_ns", p.end_ns}, {"clock_mhz", p.clock_mhz}, {"ops", p.ops}});
  json path = json::array();
  for (const auto& s : r.path) {
    if (s.lane < 0 || static_cast<std::size_t>(s.lane) >= r.lanes.size())
      throw std::invalid_argument("html report: a critical-path step names lane " + std::to_string(s.lane));
    // Steps on the same lane closer than the resolution are drawn as one.
    if (!path.empty() && path.back()[0] == s.lane && s.start_ns - path.back()[2].get<std::int64_t>() < resolution) {
      path.back()[2] = std::max(path.back()[2].get<std::int64_t>(), s.end_ns);
      continue;
    }
    path.push_back(json::array({s.lane, s.start_ns, s.end_ns}));
  }
  auto power = [](const ReportPower& p) { return json{{"duration_ns", p.duration_ns}, {"w", p.power_w}}; };
  return {{"ranks", ranks_json(r)}, {"rank_path", rank_path_json(r)}, {"makespan_ns", r.makespan_ns}, {"lanes", std::move(lanes)}, {"packs", std::move(packs)},
          {"path", std::move(path)}, {"min_clock_mhz", r.min_clock_mhz}, {"max_clock_mhz", r.max_clock_mhz},
          {"frontier", points_json(r.frontier)}, {"static_curve", points_json(r.static_curve)},
          {"markers", points_json(r.markers)}, {"target_s", r.target_s},
          {"power", {{"baseline", power(r.baseline_power)}, {"emo", power(r.emo_power)}}},
          {"measured", r.simulated ? "simulated runs" : "measured"}, {"timeline", r.timeline}, {"no_power", r.no_power}};
}

std::string fmt_ms(std::int64_t ns) { return fmt::format("{:.3f}", static_cast<double>(ns) / 1e6); }

/// The per-pack table, with the rest of the run and its total under it when measured.
std::string pack_table(const HtmlReport& r) {
  const std::string run = r.simulated ? "simulated run" : "measured";
  std::string html = "<h2>Packs</h2><p>Predicted: the pack models at the plan's clock. " +
                     std::string(r.simulated ? "Measured: the policy's run on the simulated device (simulated)."
                                             : "Measured: the policy's run on the GPU.") +
                     " Time: first op's start to last op's end; energy: idle power over that time plus the "
                     "pack's ops above idle.</p>\n<div class=\"packs-box\"><table id=\"pack-table\"><tr><th>pack</th>"
                     "<th>GPU</th><th>ops</th><th>recorded (ms)</th><th>slack (ms)</th><th>clock (MHz)</th>"
                     "<th>predicted (ms)</th><th>predicted (J)</th><th>" + run + " (ms)</th><th>" + run +
                     " (J)</th></tr>\n";
  for (const auto& p : r.pack_rows) {
    const std::string measured = p.measured_ns && p.measured_j
                                     ? fmt::format("<td>{}</td><td>{:.4f}</td>", fmt_ms(*p.measured_ns), *p.measured_j)
                                     : "<td class=\"nm\">not measured</td><td class=\"nm\">not measured</td>";
    html += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0f}</td><td>{}</td>"
                        "<td>{:.4f}</td>{}</tr>\n",
                        p.id, p.gpu, p.ops, fmt_ms(p.recorded_ns), fmt_ms(p.slack_ns), p.clock_mhz,
                        fmt_ms(p.predicted_ns), p.predicted_j, measured);
  }
  auto footer = [&](const char* label, const std::optional<ReportPoint>& pt) {
    if (!pt) return std::string();
    return fmt::format("<tr><td colspan=\"8\">{}</td><td>{:.3f}</td><td>{:.4f}</td></tr>\n", label, pt->time_s * 1e3,
                       pt->energy_j);
  };
  html += footer("outside the packs (gaps, lead-in, tail; time summed over GPUs)", r.outside_packs);
  html += footer("the whole run (time: makespan)", r.run_total);
  return html + "</table></div>\n";
}

/// The legend of the packs' colours: a blue-to-red swatch and the clock range.
std::string clock_scale(const HtmlReport& r) {
  return "<span style=\"background:linear-gradient(90deg,hsl(240,75%,50%),hsl(180,75%,50%),hsl(120,75%,50%),"
         "hsl(60,75%,50%),hsl(0,75%,50%))\"></span>packs: colour = SM clock from " +
         std::to_string(static_cast<int>(r.min_clock_mhz)) + " MHz (blue) to " +
         std::to_string(static_cast<int>(r.max_clock_mhz)) + " MHz (red)";
}

/// A linked job: the job view's box and the per-rank table (its sum row: the ranks summed); "" for
/// one trace.
std::string rank_section(const HtmlReport& r) {
  if (r.ranks.empty()) return "";
  const std::string run = r.simulated ? "simulated run" : "measured";
  const std::string caption =
      !r.rank_caption.empty()
          ? escape_html(r.rank_caption)
          : "One lane per rank: its GPU's packs coloured by the plan's clock, the job's critical path as recorded at "
            "the max clock (thick: on a rank; dashed: from rank to rank), and at the right the rank's savings: its "
            "GPU's energy in the kept plan's run against the baseline run (" +
                std::string(r.simulated ? "simulated runs" : "measured") + ").";
  std::string html =
      "<h2>Ranks: packs by SM clock, the critical path across ranks</h2><p>" + caption + "</p><div class=\"legend\">" + clock_scale(r) +
      "<span style=\"background:#111;height:3px\"></span>critical path</div><div id=\"ranks-box\"></div>\n<div class=\"packs-box\"><table id=\"rank-table\"><tr><th>rank</th>"
      "<th>GPU</th><th>trace</th><th>packs</th><th>mean clock (MHz)</th><th>baseline (J, " + run + ")</th><th>EMO (J, " +
      run + ")</th><th>saved (J)</th><th>savings</th><th>of the job's savings</th></tr>\n";
  double base = 0, emo = 0;
  bool all = true;
  for (const ReportRank& k : r.ranks) all = all && rank_savings(k).has_value();
  for (const ReportRank& k : r.ranks) base += k.baseline_j.value_or(0), emo += k.emo_j.value_or(0);
  const std::string nm = "<td class=\"nm\">not measured</td>";
  for (const ReportRank& k : r.ranks) {
    std::string energy = nm + nm + nm + nm + nm;
    if (rank_savings(k) && all && base > 0) {
      energy = fmt::format("<td>{:.4f}</td><td>{:.4f}</td><td>{:.4f}</td><td>{:.2f} %</td><td>{:.2f} %</td>", *k.baseline_j,
                           *k.emo_j, *k.baseline_j - *k.emo_j, 100 * *rank_savings(k),
                           100 * (*k.baseline_j - *k.emo_j) / base);
    }
    html += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0f}</td>{}</tr>\n", k.rank, k.gpu,
                        escape_html(k.file), k.packs, k.mean_clock_mhz, energy);
  }
  if (all && base > 0) {
    html += fmt::format("<tr class=\"job-sum\"><td colspan=\"5\">the job (sum over ranks)</td><td>{:.4f}</td><td>{:.4f}</td>"
                        "<td>{:.4f}</td><td>{:.2f} %</td><td>{:.2f} %</td></tr>\n",
                        base, emo, base - emo, 100 * (1 - emo / base), 100 * (1 - emo / base));
  }
  return html + "</table></div>\n";
}

/// The summary table and the notes under it.
std::string summary(const HtmlReport& r) {
  std::string html =
      "<table id=\"summary\"><tr><th>schedule</th><th>time (s)</th><th>energy (J)</th><th>savings</th><th>slowdown</th></tr>\n";
  for (const auto& row : r.rows) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "<td>%.6f</td><td>%.3f</td><td>%.2f %%</td><td>%.2f %%</td>", row.time_s, row.energy_j,
                  100 * row.savings, 100 * row.slowdown);
    html += "<tr><td>" + escape_html(row.label) + "</td>" + buf + "</tr>\n";
  }
  html += "</table>\n";
  for (const auto& n : r.notes) html += "<p>" + escape_html(n) + "</p>\n";
  return html;
}

}  // namespace

std::string render_html_report(const HtmlReport& r) {
  if (r.makespan_ns <= 0) throw std::invalid_argument("html report: makespan must be positive");
  const json data = report_data(r);
  const std::string measured = r.simulated ? "from simulated runs" : "measured";
  std::string html = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>EMO report: " + escape_html(r.title) +
                     "</title><style>" + kStyle + "</style></head><body>\n";
  html += "<h1>EMO report: " + escape_html(r.title) + " on " + escape_html(r.gpu) + "</h1>\n";
  if (r.simulated)
    html += "<div class=\"banner\">Simulated device: every time and energy figure here comes from EMO's simulated "
            "GPU, not from hardware.</div>\n";
  html += summary(r);
  html += rank_section(r);
  html += "<div class=\"plots\"><div><h2>Energy–latency: EMO and static clocks</h2><div id=\"frontier-box\"></div>"
          "<p>Curves: EMO's frontier as the pack models predict it; every static clock run, " +
          measured + ". Markers: baseline, best static clock within the target and EMO (" + measured +
          "), and EMO as predicted.</p></div>\n<div><h2>Power over the iteration</h2><div id=\"power-box\"></div><p>All "
          "GPUs, mean over " + std::to_string(std::max(r.baseline_power.power_w.size(), r.emo_power.power_w.size())) +
          " intervals (" + measured + ").</p></div></div>\n";
  if (r.timeline) {
    html += "<h2>Timeline</h2><div class=\"legend\"><span style=\"background:#4c78a8\"></span>GPU op"
            "<span style=\"background:#d62728\"></span>op on the critical path<span style=\"background:#111;height:3px\"></span>"
            "critical path (dashed: lane to lane, across gaps)<span style=\"background:#9c9c9c\"></span>CPU"
            + clock_scale(r) + "</div><div id=\"timeline-box\"></div>\n";
    html += pack_table(r);
  }
  html += "<script type=\"application/json\" id=\"emo-data\">" + script_safe(data) + "</script>\n";
  html += std::string("<script>(function(){") + kScriptTimeline + kScriptRanks + kScriptFrontier + kScriptPower + "})();</script>\n</body></html>\n";
  return html;
}

}  // namespace emo::output
