// The admin dashboard's charts (backoffice/coupon_admin/dashboard.py renders the figures as JSON).
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("dashboard-data").textContent);
  const grid = { left: 48, right: 24, top: 40, bottom: 32, containLabel: true };

  function draw(id, option) {
    const chart = echarts.init(document.getElementById(id), null, { renderer: "svg" });
    chart.setOption(option);
    window.addEventListener("resize", () => chart.resize());
  }

  draw("chart-activity", {
    tooltip: { trigger: "axis" },
    legend: { data: [data.names.claims, data.names.uses] },
    grid: grid,
    xAxis: { type: "category", data: data.days },
    yAxis: { type: "value", minInterval: 1 },
    series: [
      { name: data.names.claims, type: "bar", data: data.claims },
      { name: data.names.uses, type: "bar", data: data.uses },
    ],
  });
  draw("chart-discount", {
    tooltip: { trigger: "axis" },
    legend: { data: [data.names.discount] },
    grid: grid,
    xAxis: { type: "category", data: data.days },
    yAxis: { type: "value" },
    series: [{ name: data.names.discount, type: "line", data: data.discount, areaStyle: {} }],
  });
  draw("chart-top", {
    tooltip: { trigger: "axis" },
    legend: { data: [data.names.claims, data.names.uses] },
    grid: grid,
    xAxis: { type: "value", minInterval: 1 },
    yAxis: { type: "category", data: data.top.names.slice().reverse() },
    series: [
      { name: data.names.claims, type: "bar", data: data.top.claims.slice().reverse() },
      { name: data.names.uses, type: "bar", data: data.top.uses.slice().reverse() },
    ],
  });
})();
