# Checks the files `pipeweave calibrate --report DIR` wrote for the synthetic log:
#   cmake -DREPORT=<dir> -P check_calibration_report.cmake
file(READ "${REPORT}/calibration.csv" csv)
if(NOT csv MATCHES "^benchmark,label,unit,measured,spread,run_to_run_spread,runs,logs,clock_mhz,peak_at_clock,fraction_of_peak,catalog,sets\n")
  message(FATAL_ERROR "calibration.csv has no header row:\n${csv}")
endif()
# bf16: 880 TFLOP/s at 1650 MHz, 892.109 peak at that clock, 98.64% of it; sets the bf16 rate.
if(NOT csv MATCHES "\ntensor_bf16,\"tensor bf16\",TFLOP/s,880,[^,]+,0,3,1,1650,892\\.1[0-9]*,0\\.986[0-9]*,989\\.4[0-9]*,tensor_flops_per_clk_per_sm\\.fp16_bf16\n")
  message(FATAL_ERROR "calibration.csv lacks the bf16 row:\n${csv}")
endif()
string(REGEX MATCHALL "\n" lines "${csv}")
list(LENGTH lines rows)
if(NOT rows EQUAL 13)  # header + 12 figures
  message(FATAL_ERROR "calibration.csv has ${rows} lines, expected 13")
endif()
file(READ "${REPORT}/calibration.svg" svg)
if(NOT svg MATCHES "^<svg xmlns=\"http://www.w3.org/2000/svg\"" OR NOT svg MATCHES ">tensor bf16</text>" OR NOT svg MATCHES "</svg>\n$")
  message(FATAL_ERROR "calibration.svg is not the expected chart:\n${svg}")
endif()
