# A sweep under `mpirun -np 2` writes the same CSV and JSON, byte for byte, as one process.
# Run by CTest: cmake -DBIN=clustersim -DMPIEXEC=mpirun -DOUT=dir -P mpi_sweep_test.cmake
set(ARGS sweep --preset llama3-8b --set model.num_layers=8 --set model.seq_length=1024
    --set parallel.tp=2 --set parallel.pp=4 --set parallel.dp=2
    --vary parallel.schedule=GPIPE,ONE_F_ONE_B,INTERLEAVED,ZB_H1
    --vary parallel.global_batch_size=8,12,16 --vary parallel.virtual_stages=1,2)
file(MAKE_DIRECTORY ${OUT})
execute_process(COMMAND ${BIN} ${ARGS} --csv ${OUT}/single.csv --json ${OUT}/single.json
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "single-process sweep failed: ${rc}")
endif()
# Root in containers needs --allow-run-as-root; two ranks on fewer cores need --oversubscribe.
execute_process(COMMAND ${MPIEXEC} -np 2 --allow-run-as-root --oversubscribe ${BIN} ${ARGS}
                        --csv ${OUT}/mpi.csv --json ${OUT}/mpi.json
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mpirun sweep failed: ${rc}")
endif()
foreach(ext csv json)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT}/single.${ext} ${OUT}/mpi.${ext}
                  RESULT_VARIABLE differ)
  if(differ)
    message(FATAL_ERROR "mpirun and single-process ${ext} differ: ${OUT}/single.${ext} ${OUT}/mpi.${ext}")
  endif()
endforeach()
file(STRINGS ${OUT}/single.csv lines)
list(LENGTH lines n)
if(n LESS 10)
  message(FATAL_ERROR "expected at least 9 valid points, the CSV has ${n} lines")
endif()
